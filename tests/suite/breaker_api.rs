//! The breaker API from code, through the facade: builder validation, the registry,
//! subscriptions and snapshots.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resiliency::breaker::{self, State, StateChange};
use resiliency::ConfigError;
use resiliency::{Breaker, BreakerBuilder, Rejected, RejectedKind};
use tokio::time::sleep;

use crate::support;
use support::{ms, secs, BoxError};

async fn fail(b: &Breaker) -> Result<(), BoxError> {
    b.call(async { Err::<(), BoxError>("upstream failed".into()) })
        .await
}

async fn succeed(b: &Breaker) -> Result<(), BoxError> {
    b.call(async { Ok::<(), BoxError>(()) }).await
}

// ---------------------------------------------------------------------------------------------
// Validation

/// Every way of finishing a builder refuses the same options with the same error.
fn refused(builder: BreakerBuilder) -> ConfigError {
    let built = builder
        .clone()
        .build()
        .expect_err("build accepted invalid options");
    let keyed = builder
        .clone()
        .build_keyed()
        .expect_err("build_keyed accepted invalid options");
    let registered = builder
        .clone()
        .register()
        .expect_err("register accepted invalid options");
    let registered_keyed = builder
        .register_keyed()
        .expect_err("register_keyed accepted invalid options");
    assert_eq!(built, keyed);
    assert_eq!(built, registered);
    assert_eq!(built, registered_keyed);
    built
}

#[test]
fn builder_refuses_invalid_options_with_a_useful_error() {
    let one = secs(1);
    let b = || Breaker::builder("api.invalid");
    let cases: Vec<(BreakerBuilder, &str)> = vec![
        (
            b().capacity(0.0).timeout(one),
            "`capacity` must lie between 0 and 1 (exclusive), got 0: it is the share of time a worker stays free, e.g. `capacity = 0.75`",
        ),
        (
            b().capacity(1.0).timeout(one),
            "`capacity` must lie between 0 and 1 (exclusive), got 1: it is the share of time a worker stays free, e.g. `capacity = 0.75`",
        ),
        (
            b().capacity(1.5).timeout(one),
            "`capacity` must lie between 0 and 1 (exclusive), got 1.5: it is the share of time a worker stays free, e.g. `capacity = 0.75`",
        ),
        (
            b().capacity(-0.5).timeout(one),
            "`capacity` must lie between 0 and 1 (exclusive), got -0.5: it is the share of time a worker stays free, e.g. `capacity = 0.75`",
        ),
        (
            b().capacity(f64::NAN).timeout(one),
            "`capacity` must lie between 0 and 1 (exclusive), got NaN: it is the share of time a worker stays free, e.g. `capacity = 0.75`",
        ),
        (
            b().capacity(0.75),
            "`capacity` needs `timeout`: error_timeout = timeout * capacity / (1 - capacity); add e.g. `timeout = \"2s\"`",
        ),
        (
            b().capacity(0.75).timeout(one).error_timeout(one),
            "`error_timeout` and `capacity` both set how long the breaker stays open; keep one",
        ),
        (
            b().failure_rate(0.5).error_threshold(3),
            "`error_threshold` (count rule) and `failure_rate` (rate rule) exclude each other; keep one",
        ),
        (
            b().failure_rate(0.0),
            "`failure_rate` must lie in (0, 1], got 0: the share of failed calls that opens the breaker, e.g. `failure_rate = 0.5`",
        ),
        (
            b().failure_rate(1.5),
            "`failure_rate` must lie in (0, 1], got 1.5: the share of failed calls that opens the breaker, e.g. `failure_rate = 0.5`",
        ),
        (
            b().failure_rate(f64::NAN),
            "`failure_rate` must lie in (0, 1], got NaN: the share of failed calls that opens the breaker, e.g. `failure_rate = 0.5`",
        ),
        (
            b().min_calls(10),
            "`min_calls` belongs to the rate rule; add `failure_rate = ...` or remove it",
        ),
        (
            b().error_threshold(0),
            "`error_threshold` must be at least 1, e.g. `error_threshold = 3`",
        ),
        (
            b().success_threshold(0),
            "`success_threshold` must be at least 1, e.g. `success_threshold = 3`",
        ),
        (
            b().half_open_calls(0),
            "`half_open_calls` must be at least 1, e.g. `half_open_calls = 3`",
        ),
        (
            b().failure_rate(0.5).min_calls(0),
            "`min_calls` must be at least 1, e.g. `min_calls = 3`",
        ),
        (b().max_keys(0), "`max_keys` must be at least 1, e.g. `max_keys = 3`"),
        (b().timeout(Duration::ZERO), "`timeout` must be above zero, e.g. `timeout = \"450ms\"`"),
        (
            b().half_open_timeout(Duration::ZERO),
            "`half_open_timeout` must be above zero, e.g. `half_open_timeout = \"450ms\"`",
        ),
        (
            b().error_timeout(Duration::ZERO),
            "`error_timeout` must be above zero, e.g. `error_timeout = \"450ms\"`",
        ),
        (
            b().error_window(Duration::ZERO),
            "`error_window` must be above zero, e.g. `error_window = \"450ms\"`",
        ),
        (
            b().capacity(2.0).timeout(one).backoff(0.0),
            "`capacity` must lie between 0 and 1 (exclusive), got 2: it is the share of time a worker stays free, e.g. `capacity = 0.75`; `backoff` must be a factor of at least 1, got 0, e.g. `backoff = 2.0`",
        ),
        (
            b().backoff(2.0).max_error_timeout(Duration::ZERO),
            "`max_error_timeout` must be above zero, e.g. `max_error_timeout = \"450ms\"`",
        ),
        (
            b().idle_timeout(Duration::ZERO),
            "`idle_timeout` must be above zero, e.g. `idle_timeout = \"450ms\"`",
        ),
        (
            b().timeout(one).half_open_timeout(one),
            "`half_open_timeout` (1s) must be shorter than `timeout` (1s)",
        ),
        (
            b().timeout(ms(500)).half_open_timeout(one),
            "`half_open_timeout` (1s) must be shorter than `timeout` (500ms)",
        ),
        (
            b().backoff(0.5),
            "`backoff` must be a factor of at least 1, got 0.5, e.g. `backoff = 2.0`",
        ),
        (
            b().backoff(-2.0),
            "`backoff` must be a factor of at least 1, got -2, e.g. `backoff = 2.0`",
        ),
        (
            b().backoff(f64::NAN),
            "`backoff` must be a factor of at least 1, got NaN, e.g. `backoff = 2.0`",
        ),
        (
            b().backoff(f64::INFINITY),
            "`backoff` must be a factor of at least 1, got inf, e.g. `backoff = 2.0`",
        ),
    ];
    for (builder, message) in cases {
        let error = refused(builder);
        assert_eq!(
            error.to_string(),
            format!("breaker `api.invalid`: {message}")
        );
        let _: &dyn std::error::Error = &error;
    }
    assert!(
        breaker::get("api.invalid").is_none(),
        "nothing invalid was registered"
    );
    assert!(breaker::get_keyed("api.invalid").is_none());

    let empty = refused(Breaker::builder(""));
    assert_eq!(empty.to_string(), "breaker ``: `name` must not be empty");
}

#[test]
fn builder_accepts_the_edges_of_valid_options() {
    let ok = |builder: BreakerBuilder| builder.build().map(|_| ()).map_err(|e| e.to_string());
    let b = || Breaker::builder("api.valid");
    assert_eq!(ok(b()), Ok(()));
    assert_eq!(ok(b().capacity(0.001).timeout(secs(1))), Ok(()));
    assert_eq!(ok(b().capacity(0.999).timeout(secs(1))), Ok(()));
    assert_eq!(ok(b().failure_rate(1.0).min_calls(1)), Ok(()));
    assert_eq!(ok(b().backoff(1.0)), Ok(()));
    assert_eq!(ok(b().timeout(secs(1)).half_open_timeout(ms(999))), Ok(()));
    assert_eq!(
        ok(b().half_open_timeout(secs(5))),
        Ok(()),
        "half_open_timeout alone"
    );
    let built = b().capacity(0.75).timeout(secs(60)).build().unwrap();
    assert_eq!(built.error_timeout(), secs(180));
    assert_eq!(built.name(), "api.valid");
    assert_eq!(built.key(), None);
    assert_eq!(
        b().build().unwrap().error_timeout(),
        secs(10),
        "the documented default"
    );
    assert!(
        breaker::get("api.valid").is_none(),
        "build does not register"
    );
}

// ---------------------------------------------------------------------------------------------
// Registry

#[test]
fn register_twice_with_the_same_name_returns_the_same_breaker() {
    let first = Breaker::builder("api.register_twice")
        .error_timeout(secs(5))
        .register()
        .unwrap();
    let second = Breaker::builder("api.register_twice")
        .error_timeout(secs(5))
        .register()
        .unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    let other = Breaker::builder("api.register_twice")
        .error_timeout(secs(99))
        .register();
    assert_eq!(
        other.unwrap_err().to_string(),
        "breaker `api.register_twice`: `error_timeout` = 99s from `register` differs from 5s \
         from `register`",
        "other options are refused, not silently dropped"
    );
    assert_eq!(second.error_timeout(), secs(5));
    assert!(Arc::ptr_eq(
        &first,
        &breaker::get("api.register_twice").unwrap()
    ));

    let keyed = Breaker::builder("api.register_keyed")
        .register_keyed()
        .unwrap();
    let again = Breaker::builder("api.register_keyed")
        .register_keyed()
        .unwrap();
    assert!(Arc::ptr_eq(&keyed, &again));
    assert!(Arc::ptr_eq(
        &keyed,
        &breaker::get_keyed("api.register_keyed").unwrap()
    ));

    // A name holds a single breaker or a keyed family, not both.
    let clash = Breaker::builder("api.register_twice")
        .register_keyed()
        .unwrap_err();
    assert_eq!(
        clash.to_string(),
        "breaker `api.register_twice`: the name is already registered to a single breaker"
    );
    let clash = Breaker::builder("api.register_keyed")
        .register()
        .unwrap_err();
    assert_eq!(
        clash.to_string(),
        "breaker `api.register_keyed`: the name is already registered to a keyed breaker"
    );
    assert!(breaker::get("api.register_keyed").is_none());
    assert!(breaker::get_keyed("api.register_twice").is_none());
}

#[resiliency::breaker(name = "api.shared", error_threshold = 5, error_timeout = "1m")]
async fn shared(ok: bool) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err("down".into())
    }
}

#[tokio::test(start_paused = true)]
async fn a_breaker_registered_from_code_is_the_one_an_attribute_with_its_name_uses() {
    let from_code = Breaker::builder("api.shared")
        .error_threshold(1)
        .error_timeout(secs(7))
        .register()
        .unwrap();
    assert!(shared(false).await.is_err());
    assert_eq!(
        from_code.state(),
        State::Open,
        "the code's error_threshold = 1 applies"
    );
    let refused = shared(true).await.unwrap_err();
    assert_eq!(
        refused.downcast_ref::<Rejected>().unwrap().retry_after(),
        Some(secs(7))
    );
    assert!(Arc::ptr_eq(
        &from_code,
        &breaker::get("api.shared").unwrap()
    ));
}

#[resiliency::breaker(name = "api.names.site")]
async fn named_site() -> Result<(), BoxError> {
    Ok(())
}

#[resiliency::breaker]
async fn default_name() -> Result<(), BoxError> {
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn names_lists_registered_breakers_and_families() {
    let has = |name: &str| breaker::names().iter().any(|n| n == name);
    assert!(!has("api.names.site"), "a site registers on its first call");
    Breaker::builder("api.names.single").register().unwrap();
    Breaker::builder("api.names.keyed")
        .register_keyed()
        .unwrap();
    Breaker::builder("api.names.unregistered").build().unwrap();
    named_site().await.unwrap();
    default_name().await.unwrap();
    assert!(has("api.names.single"));
    assert!(has("api.names.keyed"));
    assert!(has("api.names.site"));
    assert!(!has("api.names.unregistered"), "build does not register");
    let default = concat!(module_path!(), "::", "default_name");
    assert!(
        has(default),
        "the default name is module path + fn name: {:?}",
        breaker::names()
    );
    assert!(breaker::get(default).is_some());
}

// ---------------------------------------------------------------------------------------------
// Subscriptions

type Log = Arc<Mutex<Vec<(Option<String>, State, State)>>>;

fn log_changes_of(name: &'static str) -> (breaker::SubscriptionId, Log) {
    let log: Log = Arc::default();
    let sink = log.clone();
    let id = breaker::subscribe(move |change: &StateChange| {
        if &*change.name == name {
            let key = change.key.as_deref().map(str::to_owned);
            sink.lock().unwrap().push((key, change.from, change.to));
        }
    });
    (id, log)
}

#[resiliency::breaker(name = "api.subscribe", error_threshold = 2, error_timeout = "10s")]
async fn watched(ok: bool) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err("down".into())
    }
}

#[tokio::test(start_paused = true)]
async fn subscribe_sees_a_full_cycle_and_unsubscribe_stops_it() {
    let (id, log) = log_changes_of("api.subscribe");
    let cycle = || async {
        assert!(watched(false).await.is_err());
        assert!(watched(false).await.is_err()); // Closed -> Open
        assert!(watched(true).await.is_err()); // refused: no change
        sleep(secs(10)).await;
        watched(true).await.unwrap(); // Open -> HalfOpen -> Closed
    };
    cycle().await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            (None, State::Closed, State::Open),
            (None, State::Open, State::HalfOpen),
            (None, State::HalfOpen, State::Closed),
        ]
    );

    let b = breaker::get("api.subscribe").unwrap();
    b.force_open();
    b.reset();
    assert_eq!(
        log.lock().unwrap()[3..],
        [
            (None, State::Closed, State::ForcedOpen),
            (None, State::ForcedOpen, State::Closed),
        ]
    );

    assert!(breaker::unsubscribe(id));
    assert!(!breaker::unsubscribe(id), "already gone");
    cycle().await;
    assert_eq!(
        log.lock().unwrap().len(),
        5,
        "no change is delivered after unsubscribe"
    );
}

#[resiliency::breaker(name = "api.subscribe_keyed", key = host, error_threshold = 1, error_timeout = "1s")]
async fn watched_host(host: &str) -> Result<(), BoxError> {
    Err(format!("{host} is down").into())
}

#[tokio::test(start_paused = true)]
async fn a_state_change_of_a_keyed_breaker_carries_its_key() {
    let (id, log) = log_changes_of("api.subscribe_keyed");
    assert!(watched_host("h1").await.is_err());
    sleep(secs(1)).await;
    assert!(watched_host("h1").await.is_err()); // the probe fails
    breaker::unsubscribe(id);
    let key = Some("h1".to_string());
    assert_eq!(
        *log.lock().unwrap(),
        [
            (key.clone(), State::Closed, State::Open),
            (key.clone(), State::Open, State::HalfOpen),
            (key, State::HalfOpen, State::Open),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Snapshots

#[tokio::test(start_paused = true)]
async fn snapshot_counts_under_the_count_rule() {
    let b = Breaker::builder("api.snapshot_count")
        .error_threshold(3)
        .error_window(secs(10))
        .error_timeout(secs(30))
        .build()
        .unwrap();
    let snap = b.snapshot();
    assert_eq!(snap.state, State::Closed);
    assert_eq!(snap.recent_errors, 0);
    assert_eq!(snap.recent_calls, None, "the count rule counts errors only");
    assert_eq!(snap.open_for, secs(30));
    assert_eq!(snap.half_opens_in, None);

    fail(&b).await.unwrap_err();
    sleep(secs(6)).await;
    fail(&b).await.unwrap_err();
    succeed(&b).await.unwrap();
    assert_eq!(b.snapshot().recent_errors, 2);
    sleep(secs(5)).await; // the first error left the 10 s window
    assert_eq!(b.snapshot().recent_errors, 1);
    fail(&b).await.unwrap_err();
    fail(&b).await.unwrap_err();
    let snap = b.snapshot();
    assert_eq!(snap.state, State::Open);
    assert_eq!(snap.half_opens_in, Some(secs(30)));
    sleep(secs(12)).await;
    assert_eq!(b.snapshot().half_opens_in, Some(secs(18)));
    sleep(secs(18)).await;
    let snap = b.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_opens_in, None);
    succeed(&b).await.unwrap();
    let snap = b.snapshot();
    assert_eq!(snap.state, State::Closed);
    assert_eq!(snap.recent_errors, 0, "closing clears the window");
}

#[tokio::test(start_paused = true)]
async fn snapshot_counts_under_the_rate_rule() {
    let b = Breaker::builder("api.snapshot_rate")
        .failure_rate(0.5)
        .min_calls(10)
        .error_window(secs(10))
        .build()
        .unwrap();
    for _ in 0..6 {
        succeed(&b).await.unwrap();
    }
    for _ in 0..3 {
        fail(&b).await.unwrap_err();
    }
    let snap = b.snapshot();
    assert_eq!(snap.state, State::Closed);
    assert_eq!((snap.recent_errors, snap.recent_calls), (3, Some(9)));
    sleep(secs(11)).await;
    let snap = b.snapshot();
    assert_eq!(
        (snap.recent_errors, snap.recent_calls),
        (0, Some(0)),
        "the window moved on"
    );
}

#[tokio::test(start_paused = true)]
async fn a_breaker_built_from_code_is_usable_without_the_macros() {
    let b = Breaker::builder("api.from_code")
        .error_threshold(1)
        .error_timeout(secs(1))
        .timeout(ms(100))
        .build()
        .unwrap();
    assert!(breaker::get("api.from_code").is_none());
    let counted = b
        .call_if(|e: &BoxError| e.to_string() != "not found", async {
            Err::<(), BoxError>("not found".into())
        })
        .await;
    assert!(counted.is_err());
    assert_eq!(
        b.state(),
        State::Closed,
        "an error that count_if rejects does not count"
    );
    let timeout: Result<(), Rejected> = b.call(std::future::pending()).await;
    let timeout = timeout.unwrap_err();
    assert_eq!(timeout.kind(), RejectedKind::Timeout);
    assert_eq!(
        timeout.to_string(),
        "call through circuit breaker `api.from_code` timed out after 100ms"
    );
    assert_eq!(b.state(), State::Open);
    let refused: Result<(), Rejected> = b.call(async { Ok(()) }).await;
    assert_eq!(refused.unwrap_err().retry_after(), Some(secs(1)));
    assert!(format!("{b:?}").contains("api.from_code"));
}

#[test]
fn rejected_is_a_plain_error_type() {
    fn error<E: std::error::Error + Send + Sync + Clone + 'static>() {}
    error::<Rejected>();
    fn convert<E: From<Rejected>>() {}
    convert::<BoxError>();
    convert::<anyhow::Error>();
}
