//! `resiliency::tower::RaceRetryLayer` over `tower::service_fn`, under a paused clock.
#![cfg(feature = "tower")]

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::race_retry::{self, After, RaceRetry};
use resiliency::settings::{self, Policy};
use resiliency::tower::RaceRetryLayer;
use support::ms;
use tower::{service_fn, Layer, Service, ServiceExt};

/// Attempt `n` (from 1) of every request waits `delays[n - 1]` ms, then answers `n`.
fn attempts(
    delays: &'static [u64],
) -> (
    Arc<AtomicU32>,
    impl Service<&'static str, Response = u32, Error = std::io::Error> + Clone,
) {
    let count = Arc::new(AtomicU32::new(0));
    let seen = count.clone();
    let svc = service_fn(move |request: &'static str| {
        let n = seen.fetch_add(1, Ordering::Relaxed) + 1;
        async move {
            assert_eq!(request, "req", "each attempt gets the request");
            let delay = delays.get(n as usize - 1).copied().unwrap_or(0);
            tokio::time::sleep(ms(delay)).await;
            Ok(n)
        }
    });
    (count, svc)
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_attempt_is_overtaken_by_the_second() {
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower::race_retry::overtaken")
            .retries(2)
            .after(After::Fixed(ms(50)))
            .total(ms(1_000))
            .no_budget(),
    )
    .unwrap();
    let (count, inner) = attempts(&[900, 10]);
    let mut svc = layer.layer(inner);
    let start = tokio::time::Instant::now();
    let winner = svc.ready().await.unwrap().call("req").await.unwrap();
    assert_eq!(winner, 2);
    assert_eq!(start.elapsed(), ms(60));
    assert_eq!(count.load(Ordering::Relaxed), 2);
    assert_eq!(
        race_retry::stats("tower::race_retry::overtaken")
            .unwrap()
            .won_by_extra,
        1
    );
}

/// With `max_attempts_in_flight(1)` the slow first attempt is not raced: the one slot is its
/// until it answers, at 900 ms.
#[tokio::test(start_paused = true)]
async fn a_layer_with_one_attempt_in_flight_does_not_race_a_slow_attempt() {
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower::race_retry::one_at_a_time")
            .retries(2)
            .max_attempts_in_flight(1)
            .after(After::Fixed(ms(50)))
            .total(ms(1_000))
            .no_budget(),
    )
    .unwrap();
    assert_eq!(layer.policy().max_attempts_in_flight(), Some(1));
    let (count, inner) = attempts(&[900, 10]);
    let mut svc = layer.layer(inner);
    let start = tokio::time::Instant::now();
    let winner = svc.ready().await.unwrap().call("req").await.unwrap();
    assert_eq!((winner, start.elapsed()), (1, ms(900)));
    assert_eq!(count.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn past_the_deadline_the_error_is_a_rejected_deadline() {
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower::race_retry::deadline")
            .retries(1)
            .after(After::Fixed(ms(50)))
            .total(ms(200))
            .no_budget(),
    )
    .unwrap();
    let (_, inner) = attempts(&[10_000, 10_000]);
    let mut svc = layer.layer(inner);
    let error = svc.ready().await.unwrap().call("req").await.unwrap_err();
    assert!(support::rejected(&error).is_deadline(), "{error}");
}

#[tokio::test(start_paused = true)]
async fn retry_if_false_ends_the_call_with_the_inner_error() {
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower::race_retry::retry_if")
            .retries(2)
            .after(After::Fixed(ms(50)))
            .total(ms(500))
            .no_budget()
            .no_backoff(),
    )
    .unwrap()
    .retry_if(|error: &std::io::Error| error.kind() == std::io::ErrorKind::TimedOut);
    let count = Arc::new(AtomicU32::new(0));
    let seen = count.clone();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        let n = seen.fetch_add(1, Ordering::Relaxed);
        async move {
            Err::<(), _>(match n {
                0 => std::io::Error::from(std::io::ErrorKind::TimedOut),
                _ => std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            })
        }
    }));
    let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
    let error = error
        .downcast_ref::<std::io::Error>()
        .expect("the inner error, boxed");
    assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
    assert_eq!(
        count.load(Ordering::Relaxed),
        2,
        "a timeout is retried, a refusal is not"
    );
}

#[tokio::test(start_paused = true)]
async fn the_policy_is_registered_by_name_and_run_time_settings_reach_it() {
    let name = "tower::race_retry::settings";
    let layer = RaceRetryLayer::new(
        RaceRetry::builder(name)
            .retries(2)
            .after(After::Fixed(ms(50)))
            .total(ms(500))
            .no_budget(),
    )
    .unwrap();
    assert!(std::ptr::eq(layer.policy(), race_retry::get(name).unwrap()));
    settings::set(Policy::RaceRetry, name, "after", "20ms").unwrap();
    assert_eq!(layer.policy().after(), ms(20));
    let (count, inner) = attempts(&[900, 900, 5]);
    let mut svc = layer.layer(inner);
    let start = tokio::time::Instant::now();
    assert_eq!(svc.ready().await.unwrap().call("req").await.unwrap(), 3);
    assert_eq!(start.elapsed(), ms(45));
    assert_eq!(count.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_response_future_drops_every_attempt() {
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower::race_retry::dropped")
            .retries(2)
            .after(After::Fixed(ms(10)))
            .total(ms(1_000))
            .no_budget(),
    )
    .unwrap();
    let live = Arc::new(());
    let held = live.clone();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        let held = held.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            drop(held);
            Ok::<(), std::io::Error>(())
        }
    }));
    let call = svc.ready().await.unwrap().call(());
    let timed_out = tokio::time::timeout(ms(35), call).await;
    assert!(timed_out.is_err());
    drop(svc);
    assert_eq!(Arc::strong_count(&live), 1, "no attempt outlives the call");
}

#[tokio::test(start_paused = true)]
async fn a_panicking_attempt_ends_the_call_and_the_next_runs() {
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower::race_retry::panics")
            .retries(1)
            .after(After::Fixed(ms(10)))
            .total(ms(1_000))
            .no_budget(),
    )
    .unwrap();
    let mut svc = layer.layer(service_fn(|panics: bool| async move {
        assert!(!panics, "the attempt panics");
        Ok::<u8, std::io::Error>(7)
    }));
    let call = svc.ready().await.unwrap().call(true);
    assert!(tokio::spawn(call).await.unwrap_err().is_panic());
    assert_eq!(svc.ready().await.unwrap().call(false).await.unwrap(), 7);
}

#[test]
fn invalid_options_are_a_config_error() {
    let error = RaceRetryLayer::new(RaceRetry::builder("tower::race_retry::invalid").retries(2))
        .unwrap_err();
    assert!(error.to_string().contains("total"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn over_a_breaker_a_refusal_is_an_answer_when_retry_if_says_so() {
    use resiliency::tower::{BoxError, BreakerLayer};
    use resiliency::{Breaker, Rejected};

    let mut svc = tower::ServiceBuilder::new()
        .layer(
            RaceRetryLayer::new(
                RaceRetry::builder("tower::race_retry::over_breaker")
                    .retries(2)
                    .after(After::Fixed(ms(50)))
                    .total(ms(500))
                    .no_budget()
                    .no_backoff(),
            )
            .unwrap()
            .retry_if(|error: &BoxError| Rejected::find_in(&**error).is_none()),
        )
        .layer(
            BreakerLayer::new(
                Breaker::builder("tower::race_retry::over_breaker").error_threshold(1),
            )
            .unwrap(),
        )
        .service(service_fn(|_: ()| async {
            Err::<(), _>(std::io::Error::other("down"))
        }));
    // Attempt 1 fails and opens the breaker; attempt 2 is refused by it, which ends the call.
    let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(
        Rejected::find_in(&*error).unwrap().is_circuit_open(),
        "{error}"
    );
    let start = tokio::time::Instant::now();
    let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(Rejected::find_in(&*error).unwrap().is_circuit_open());
    assert_eq!(start.elapsed(), ms(0), "refused at once, not retried");
}

#[resiliency::race_retry(name = "tower_race.shared", retries = 1, after = "50ms", total = "1s")]
async fn shared_with_a_layer(n: u32) -> Result<u32, support::BoxError> {
    Ok(n)
}

/// A `#[race_retry]` fn is found by its name once it ran, and a `RaceRetryLayer` of that name
/// drives the same policy: the attribute's settings, one set of stats, and a change of setting
/// reaches both; a layer of other options is an error (`tests/one_registry.rs` has the rest).
#[tokio::test(start_paused = true)]
async fn a_layer_of_an_attribute_sites_name_drives_its_policy() {
    assert_eq!(shared_with_a_layer(1).await.unwrap(), 1);
    let policy = race_retry::get("tower_race.shared").expect("found after its first call");
    assert_eq!(policy.total(), Duration::from_secs(1));
    let error = RaceRetryLayer::new(RaceRetry::builder("tower_race.shared").total(ms(300)))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("race_retry `tower_race.shared`: `"),
        "{error}"
    );
    let layer = RaceRetryLayer::new(
        RaceRetry::builder("tower_race.shared")
            .retries(1)
            .after(After::Fixed(ms(50)))
            .total(Duration::from_secs(1)),
    )
    .unwrap();
    let mut service = layer.layer(service_fn(
        |n: u32| async move { Ok::<_, support::BoxError>(n) },
    ));
    assert_eq!(service.ready().await.unwrap().call(2).await.unwrap(), 2);
    let via_layer = race_retry::get("tower_race.shared").unwrap();
    assert!(std::ptr::eq(policy, via_layer), "one policy for the name");
    assert!(std::ptr::eq(layer.policy(), via_layer));
    assert_eq!(
        via_layer.total(),
        Duration::from_secs(1),
        "the attribute's settings"
    );
    settings::set(Policy::RaceRetry, "tower_race.shared", "total", "700ms").unwrap();
    assert_eq!(policy.total(), ms(700));
    assert!(race_retry::names().contains(&"tower_race.shared"));
    assert!(race_retry::stats("tower_race.shared").is_some());
}
