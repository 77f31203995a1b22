//! `RESILIENCY_DISABLED` (here ` On`: any case, spaces ignored): every breaker passes calls through. Its own test binary, with a single
//! test, so that setting the variable affects nothing else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::Breaker;

mod support;
use support::BoxError;

#[resiliency::breaker(
    name = "kill_switch.threshold_1",
    error_threshold = 1,
    error_timeout = "1h"
)]
async fn fragile(ok: bool, ran: &AtomicUsize) -> Result<u32, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    if ok {
        Ok(1)
    } else {
        Err("upstream failed".into())
    }
}

#[resiliency::breaker(name = "kill_switch.forced", error_timeout = "1h")]
async fn forced(ran: &AtomicUsize) -> Result<u32, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    Ok(2)
}

#[resiliency::breaker(name = "kill_switch.keyed", key = host, error_threshold = 1, error_timeout = "1h")]
async fn keyed(host: &str, ok: bool) -> Result<u32, BoxError> {
    let _ = host;
    if ok {
        Ok(3)
    } else {
        Err("down".into())
    }
}

#[tokio::test(start_paused = true)]
async fn resiliency_disabled_makes_every_breaker_pass_calls_through() {
    // Before any breaker is used: the variable is read once, on first use. (Edition 2021:
    // `set_var` is a safe fn here.)
    std::env::set_var("RESILIENCY_DISABLED", " On");
    let log = support::Captured::default();
    {
        let _subscriber = tracing::subscriber::set_default(log.subscriber());
        assert!(breaker::disabled());
        assert!(breaker::disabled());
    }
    // Said once, at warn, when it takes effect.
    let said = log.text();
    assert_eq!(
        said.matches("RESILIENCY_DISABLED is set").count(),
        1,
        "{said}"
    );
    assert!(said.contains("WARN"), "{said}");

    let ran = AtomicUsize::new(0);
    for _ in 0..10 {
        let error = fragile(false, &ran).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "upstream failed",
            "the body ran and its error came back"
        );
    }
    assert_eq!(ran.load(Ordering::SeqCst), 10);
    assert_eq!(fragile(true, &ran).await.unwrap(), 1);
    let b = breaker::get("kill_switch.threshold_1").expect("the site still registers");
    assert_eq!(b.state(), State::Closed, "error_threshold = 1 never opens");

    // Forced open from code: still passes calls.
    let ran = AtomicUsize::new(0);
    assert_eq!(forced(&ran).await.unwrap(), 2);
    let f = breaker::get("kill_switch.forced").unwrap();
    f.force_open();
    assert_eq!(
        f.state(),
        State::Closed,
        "a disabled breaker ignores forcing"
    );
    for _ in 0..3 {
        assert_eq!(forced(&ran).await.unwrap(), 2);
    }
    assert_eq!(ran.load(Ordering::SeqCst), 4);

    // Keyed breakers too.
    for _ in 0..3 {
        assert!(keyed("a", false).await.is_err());
    }
    assert_eq!(keyed("a", true).await.unwrap(), 3);
    let family = breaker::get_keyed("kill_switch.keyed").unwrap();
    assert_eq!(family.breaker("a").state(), State::Closed);

    // Bypassed breakers hold nothing worth keeping: idle keys are evicted as usual.
    let hosts = Breaker::builder("kill_switch.keyed_idle")
        .build_keyed()
        .unwrap();
    for host in 0..100u32 {
        let b = hosts.breaker(&host);
        assert!(b.call(async { Ok::<_, BoxError>(()) }).await.is_ok());
    }
    assert_eq!(hosts.len(), 100);
    hosts.evict_idle();
    hosts.evict_idle();
    assert_eq!(hosts.len(), 0, "idle bypassed keys are evicted");

    // A breaker built from code, with a timeout: passed through untouched.
    let code = Breaker::builder("kill_switch.code")
        .error_threshold(1)
        .timeout(Duration::from_millis(10))
        .build()
        .unwrap();
    code.force_open();
    let slow = code
        .call(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, BoxError>(4)
        })
        .await;
    assert_eq!(
        slow.unwrap(),
        4,
        "neither forced open nor the timeout applies"
    );
}
