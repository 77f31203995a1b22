//! `#[timeout]`, `Timeout::builder` and `TimeoutLayer`: what the docs promise, on a paused clock,
//! and the time limit's "Guarantees" (a body that panics, calls dropped at any point, runtimes
//! without a time driver, extreme settings).

use crate::support::{self, ms, secs};

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use resiliency::settings::{self, Policy};
use resiliency::timeout;
use resiliency::timeout::Timeout;
use resiliency::{breaker, race_retry, time_left, Rejected, RejectedKind};
use tokio::time::{sleep, Instant};

/// Sets a flag when dropped: tells when a body is gone.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[timeout("100ms")]
async fn waits(wait: Duration) -> Result<Duration, Rejected> {
    sleep(wait).await;
    Ok(wait)
}

#[tokio::test(start_paused = true)]
async fn an_answer_within_total_goes_through_and_a_late_one_is_cut_off_at_total() {
    assert_eq!(waits(ms(99)).await.unwrap(), ms(99));
    let started = Instant::now();
    let error = waits(ms(101)).await.unwrap_err();
    assert_eq!(started.elapsed(), ms(100));
    assert!(error.is_timeout());
    assert_eq!(error.kind(), RejectedKind::Timeout);
    assert_eq!(error.name(), "suite::timeout::waits");
    assert_eq!(
        error.to_string(),
        "`suite::timeout::waits` did not answer within its time limit of 100ms"
    );
    assert_eq!(error.retry_after(), None);
}

#[tokio::test(start_paused = true)]
async fn an_answer_at_the_deadline_is_kept() {
    // The body's timer and the limit's fire at the same instant: the body is polled first.
    assert_eq!(waits(ms(100)).await.unwrap(), ms(100));
}

#[tokio::test(start_paused = true)]
async fn the_body_is_dropped_before_the_caller_sees_the_error() {
    #[timeout("50ms", name = "timeout::drops_body")]
    async fn holds(flag: Arc<AtomicBool>) -> Result<(), Rejected> {
        let _held = Dropped(flag);
        std::future::pending::<()>().await;
        Ok(())
    }
    let flag = Arc::new(AtomicBool::new(false));
    let limit = timeout::get("timeout::drops_body");
    assert!(limit.is_none(), "set up at the first call");
    let call = holds(flag.clone());
    let error = call.await.unwrap_err();
    assert!(error.is_timeout());
    assert!(flag.load(Ordering::SeqCst));

    // Through the builder, with the call future kept alive after it completed.
    let limit = Timeout::builder("timeout::drops_body_builder")
        .total(ms(10))
        .build()
        .unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let held = Dropped(flag.clone());
    let mut call = Box::pin(limit.call(async move {
        let _held = held;
        std::future::pending::<()>().await;
        Ok::<(), Rejected>(())
    }));
    assert!(call.as_mut().await.unwrap_err().is_timeout());
    assert!(
        flag.load(Ordering::SeqCst),
        "dropped as it fired, not with the call"
    );
    drop(call);
}

#[tokio::test(start_paused = true)]
async fn the_body_reads_its_deadline_and_the_clock_starts_at_the_first_wait_or_the_first_read() {
    #[timeout(total = "300ms")]
    async fn reads() -> Result<(Option<Duration>, Duration), Rejected> {
        let first = time_left();
        sleep(ms(100)).await;
        Ok((first, time_left().unwrap()))
    }
    let (first, later) = reads().await.unwrap();
    assert_eq!(first, Some(ms(300)));
    assert_eq!(later, ms(200));
    assert_eq!(resiliency::deadline(), None, "put back after the call");

    // A body that does not read it: the deadline counts from its first wait.
    let limit = Timeout::builder("timeout::clock")
        .total(ms(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let left = limit
        .call(async {
            sleep(ms(10)).await;
            Ok::<_, Rejected>(time_left().unwrap())
        })
        .await
        .unwrap();
    assert_eq!(left, ms(290));
    assert_eq!(started.elapsed(), ms(10));
}

#[tokio::test(start_paused = true)]
async fn nested_time_limits_give_the_sooner_deadline_and_the_inner_one_fires() {
    #[timeout("1s")]
    async fn outer(inner_total: Duration) -> Result<Duration, Rejected> {
        let limit: &'static Timeout = Box::leak(Box::new(
            Timeout::builder("timeout::nested_inner")
                .total(inner_total)
                .build()
                .unwrap(),
        ));
        limit
            .call(async {
                let left = time_left().unwrap();
                sleep(secs(5)).await;
                Ok(left)
            })
            .await
    }
    let started = Instant::now();
    let error = outer(ms(200)).await.unwrap_err();
    assert_eq!(error.name(), "timeout::nested_inner");
    assert_eq!(started.elapsed(), ms(200));
    let started = Instant::now();
    let error = outer(secs(3)).await.unwrap_err();
    assert_eq!(error.name(), "suite::timeout::nested_time_limits_give_the_sooner_deadline_and_the_inner_one_fires::outer");
    assert_eq!(started.elapsed(), secs(1));
}

#[tokio::test(start_paused = true)]
async fn under_a_breaker_a_call_cut_off_counts_as_an_error() {
    #[breaker(
        name = "timeout::under_breaker",
        error_threshold = 2,
        error_timeout = "10s"
    )]
    #[timeout("50ms")]
    async fn guarded(wait: Duration) -> Result<Duration, Rejected> {
        sleep(wait).await;
        Ok(wait)
    }
    assert!(guarded(ms(60)).await.unwrap_err().is_timeout());
    assert!(guarded(ms(60)).await.unwrap_err().is_timeout());
    // Two errors within the window: open.
    let refused = guarded(ms(1)).await.unwrap_err();
    assert!(refused.is_circuit_open(), "{refused}");
    assert_eq!(
        breaker::get("timeout::under_breaker").unwrap().state(),
        breaker::State::Open
    );
}

#[tokio::test(start_paused = true)]
async fn above_a_race_it_bounds_the_whole_race_and_drops_every_attempt() {
    static LIVE: AtomicU32 = AtomicU32::new(0);
    struct Live;
    impl Drop for Live {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
    #[timeout("250ms")]
    #[race_retry(retries = 2, after = "100ms", total = "10s")]
    async fn raced() -> Result<(), Rejected> {
        LIVE.fetch_add(1, Ordering::SeqCst);
        let _live = Live;
        sleep(secs(60)).await;
        Ok(())
    }
    let started = Instant::now();
    let error = raced().await.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert_eq!(started.elapsed(), ms(250));
    assert_eq!(LIVE.load(Ordering::SeqCst), 0, "every attempt was dropped");
}

#[tokio::test(start_paused = true)]
async fn a_fallback_answers_when_the_time_runs_out() {
    async fn cached(id: u64, reason: Rejected) -> Result<String, Rejected> {
        assert!(reason.is_timeout());
        Ok(format!("cached {id}"))
    }
    #[timeout("20ms", fallback = cached)]
    async fn fetch(id: u64) -> Result<String, Rejected> {
        sleep(ms(id)).await;
        Ok(format!("fresh {id}"))
    }
    assert_eq!(fetch(5).await.unwrap(), "fresh 5");
    assert_eq!(fetch(50).await.unwrap(), "cached 50");
}

#[tokio::test(start_paused = true)]
async fn the_builder_refuses_what_the_attribute_refuses() {
    let missing = Timeout::builder("timeout::rules").build().unwrap_err();
    assert!(
        missing.to_string().contains("`total` is required"),
        "{missing}"
    );
    let zero = Timeout::builder("timeout::rules")
        .total(Duration::ZERO)
        .build()
        .unwrap_err();
    assert!(
        zero.to_string().contains("`total` must be above zero"),
        "{zero}"
    );
    let empty = Timeout::builder("").total(ms(1)).build().unwrap_err();
    assert!(
        empty.to_string().contains("`name` must not be empty"),
        "{empty}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_attribute_and_a_builder_of_one_name_share_one_time_limit_and_its_settings() {
    #[timeout("100ms", name = "timeout::shared")]
    async fn shared(wait: Duration) -> Result<(), Rejected> {
        sleep(wait).await;
        Ok(())
    }
    let registered = Timeout::builder("timeout::shared")
        .total(ms(100))
        .register()
        .unwrap();
    shared(ms(1)).await.unwrap();
    assert!(std::ptr::eq(
        registered,
        timeout::get("timeout::shared").unwrap()
    ));
    // Raised by name at run time: the next call gets it.
    settings::set(Policy::Timeout, "timeout::shared", "total", "300ms").unwrap();
    assert_eq!(registered.total(), ms(300));
    shared(ms(200)).await.unwrap();
    assert!(shared(ms(400)).await.unwrap_err().is_timeout());
    // A zero is refused, and the limit in force stays.
    assert!(settings::set(Policy::Timeout, "timeout::shared", "total", "0s").is_err());
    assert_eq!(registered.total(), ms(300));
    settings::unset(Policy::Timeout, "timeout::shared", "total").unwrap();
    assert_eq!(registered.total(), ms(100));
}

#[tokio::test(start_paused = true)]
async fn a_call_keeps_the_total_it_started_with() {
    let limit = Timeout::builder("timeout::kept")
        .total(ms(100))
        .register()
        .unwrap();
    let mut call = Box::pin(limit.call(async {
        sleep(ms(150)).await;
        Ok::<_, Rejected>(())
    }));
    assert!(support::poll_once(call.as_mut()).await.is_pending());
    settings::set(Policy::Timeout, "timeout::kept", "total", "1s").unwrap();
    assert!(call.await.unwrap_err().is_timeout());
    settings::unset(Policy::Timeout, "timeout::kept", "total").unwrap();
}

// Guarantees ----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_body_that_panics_passes_its_panic_on_and_the_next_call_runs() {
    #[timeout("100ms", name = "timeout::panics")]
    async fn panics(now: bool) -> Result<(), Rejected> {
        if now {
            panic!("at once");
        }
        sleep(ms(10)).await;
        panic!("after a wait");
    }
    for now in [true, false] {
        let caught = AssertUnwindSafe(panics(now)).catch_unwind().await;
        assert!(caught.is_err());
        assert_eq!(resiliency::deadline(), None, "the deadline was put back");
    }
    assert!(waits(ms(1)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_at_any_point_drops_its_body_with_it() {
    let limit = Timeout::builder("timeout::dropped")
        .total(ms(100))
        .build()
        .unwrap();
    for polls in 0..3 {
        let flag = Arc::new(AtomicBool::new(false));
        let held = Dropped(flag.clone());
        let mut call = Box::pin(limit.call(async move {
            let _held = held;
            sleep(ms(10)).await;
            sleep(ms(10)).await;
            sleep(secs(10)).await;
            Ok::<(), Rejected>(())
        }));
        for _ in 0..polls {
            assert!(support::poll_once(call.as_mut()).await.is_pending());
            tokio::time::advance(ms(10)).await;
        }
        assert!(!flag.load(Ordering::SeqCst));
        drop(call);
        assert!(flag.load(Ordering::SeqCst), "dropped after {polls} polls");
    }
}

#[test]
fn without_a_time_driver_an_answer_on_the_first_poll_runs_and_a_wait_panics_with_tokios_message() {
    let limit = Timeout::builder("timeout::no_driver")
        .total(ms(100))
        .build()
        .unwrap();
    // Outside any runtime, and on a runtime without timers: a body that answers at once.
    assert_eq!(
        support::block_on_without_tokio(limit.call(async { Ok::<_, Rejected>(7) })).unwrap(),
        7
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(
        runtime
            .block_on(limit.call(async { Ok::<_, Rejected>(8) }))
            .unwrap(),
        8
    );
    // One that waits: tokio's panic, and the body dropped.
    let flag = Arc::new(AtomicBool::new(false));
    let held = Dropped(flag.clone());
    let panic = std::panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(limit.call(async move {
            let _held = held;
            tokio::task::yield_now().await;
            Ok::<_, Rejected>(())
        }))
    }))
    .unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap();
    assert!(message.contains("timers are disabled"), "{message}");
    assert!(flag.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn a_total_too_long_for_an_instant_is_never() {
    let limit = Timeout::builder("timeout::forever")
        .total(Duration::MAX)
        .build()
        .unwrap();
    assert_eq!(limit.total(), Duration::from_nanos(u64::MAX));
    let answered = limit
        .call(async {
            sleep(Duration::from_secs(400 * 365 * 24 * 3600)).await;
            Ok::<_, Rejected>(time_left())
        })
        .await
        .unwrap();
    assert!(answered.is_none_or(|left| left > Duration::from_secs(100 * 365 * 24 * 3600)));
}

#[cfg(feature = "tower")]
mod layer {
    use super::*;
    use resiliency::tower::TimeoutLayer;
    use tower::{service_fn, Layer, Service, ServiceExt};

    #[tokio::test(start_paused = true)]
    async fn the_layer_cuts_a_slow_response_off_and_its_service_reads_the_deadline() {
        let layer = TimeoutLayer::new(Timeout::builder("timeout::layer").total(ms(100))).unwrap();
        let mut svc = layer.layer(service_fn(|wait: u64| async move {
            let left = time_left().unwrap();
            sleep(ms(wait)).await;
            Ok::<_, std::io::Error>(left)
        }));
        assert_eq!(svc.ready().await.unwrap().call(10).await.unwrap(), ms(100));
        let error = svc.ready().await.unwrap().call(500).await.unwrap_err();
        assert!(support::rejected(&error).is_timeout());
        // The inner service's own error goes through, boxed.
        let mut failing = layer.layer(service_fn(|_: ()| async {
            Err::<(), _>(std::io::Error::other("upstream"))
        }));
        let error = failing.ready().await.unwrap().call(()).await.unwrap_err();
        assert_eq!(error.to_string(), "upstream");
        // One name, one time limit: the layer's is the registry's, and settings reach it.
        assert!(std::ptr::eq(
            layer.timeout(),
            timeout::get("timeout::layer").unwrap()
        ));
        settings::set(Policy::Timeout, "timeout::layer", "total", "1s").unwrap();
        assert_eq!(svc.ready().await.unwrap().call(500).await.unwrap(), secs(1));
        settings::unset(Policy::Timeout, "timeout::layer", "total").unwrap();
    }
}
