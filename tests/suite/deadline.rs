//! Deadlines that travel: `resiliency::deadline()` and `time_left()` inside calls guarded by a
//! breaker's `timeout`, a race's `total` and `each`, nested guards, the builders and the tower
//! layers; put back after each poll, a panic and a dropped call; nothing outside a guard.

use crate::support;

use std::time::Duration;

use futures::FutureExt as _;
use resiliency::{breaker, deadline, race_retry, time_left, Breaker, Rejected};
use support::{ms, secs, BoxError};
use tokio::time::Instant;

#[breaker(timeout = "2s")]
async fn timed() -> Result<(Option<Duration>, Option<Duration>), Rejected> {
    let before = time_left();
    tokio::time::sleep(ms(500)).await;
    Ok((before, time_left()))
}

#[tokio::test(start_paused = true)]
async fn a_breaker_timeout_is_the_bodys_deadline() {
    assert_eq!(deadline(), None);
    let (before, after) = timed().await.unwrap();
    assert_eq!(before, Some(secs(2)));
    assert_eq!(after, Some(ms(1500)));
    assert_eq!(deadline(), None, "put back after the call");
}

#[breaker]
async fn untimed() -> Result<Option<Instant>, Rejected> {
    Ok(deadline())
}

#[tokio::test(start_paused = true)]
async fn no_time_limit_no_deadline() {
    assert_eq!(untimed().await.unwrap(), None);
}

#[breaker(timeout = "1s")]
async fn read_late() -> Result<Option<Duration>, Rejected> {
    // The clock starts at the first wait; read after it, the deadline is the timer's.
    tokio::time::sleep(ms(300)).await;
    Ok(time_left())
}

#[tokio::test(start_paused = true)]
async fn read_after_a_wait_the_deadline_is_the_timers() {
    assert_eq!(read_late().await.unwrap(), Some(ms(700)));
}

#[breaker(timeout = "1s")]
async fn read_then_hang() -> Result<(), Rejected> {
    let at = deadline().unwrap();
    tokio::time::sleep_until(at + ms(1)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_deadline_read_is_when_the_timeout_fires() {
    let started = Instant::now();
    tokio::time::advance(ms(10)).await;
    let error = read_then_hang().await.unwrap_err();
    assert!(error.is_timeout());
    assert_eq!(started.elapsed(), ms(1010));
}

#[race_retry(retries = 2, after = "100ms", total = "450ms", each = "300ms", attempt = n)]
async fn raced() -> Result<(u32, Duration), BoxError> {
    let left = time_left().unwrap();
    if n < 2 {
        std::future::pending::<()>().await;
    }
    Ok((n, left))
}

#[tokio::test(start_paused = true)]
async fn each_attempt_sees_the_sooner_of_total_and_each() {
    // Attempt 0 at 0 ms: min(450, 0 + 300) = 300 ms left. Attempt 2 at 200 ms: min(450, 500)
    // = 450 ms, 250 ms left.
    assert_eq!(raced().await.unwrap(), (2, ms(250)));
}

#[race_retry(retries = 1, after = "100ms", total = "5s")]
async fn inner_race() -> Result<Duration, BoxError> {
    Ok(time_left().unwrap())
}

#[breaker(timeout = "1s")]
async fn breaker_over_race() -> Result<Duration, BoxError> {
    inner_race().await
}

#[breaker(timeout = "10s")]
#[race_retry(retries = 1, after = "100ms", total = "2s")]
async fn race_under_looser_breaker() -> Result<Duration, BoxError> {
    Ok(time_left().unwrap())
}

#[tokio::test(start_paused = true)]
async fn nested_guards_take_the_tighter_deadline() {
    assert_eq!(breaker_over_race().await.unwrap(), secs(1));
    assert_eq!(race_under_looser_breaker().await.unwrap(), secs(2));
    assert_eq!(deadline(), None);
}

#[breaker(timeout = "1s")]
async fn panics_inside() -> Result<(), Rejected> {
    assert!(deadline().is_some());
    panic!("the body panicked");
}

#[tokio::test(start_paused = true)]
async fn a_panic_puts_the_deadline_back() {
    let caught = std::panic::AssertUnwindSafe(panics_inside())
        .catch_unwind()
        .await;
    assert!(caught.is_err());
    assert_eq!(deadline(), None);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_call_leaves_no_deadline_behind() {
    let mut call = Box::pin(timed());
    assert!(support::poll_once(call.as_mut()).await.is_pending());
    assert_eq!(deadline(), None, "only while the body is polled");
    drop(call);
    assert_eq!(deadline(), None);
}

#[breaker(timeout = "1s")]
async fn spawns() -> Result<Option<Instant>, Rejected> {
    Ok(tokio::spawn(async { deadline() }).await.unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_spawned_task_does_not_inherit_it() {
    assert_eq!(spawns().await.unwrap(), None);
}

#[test]
fn without_a_time_driver_an_untimed_call_reads_none() {
    support::block_on_without_tokio(async {
        assert_eq!(untimed().await.unwrap(), None);
    });
}

#[test]
fn a_timed_call_answering_at_once_needs_no_time_driver() {
    #[breaker(timeout = "1s")]
    async fn at_once() -> Result<bool, Rejected> {
        Ok(deadline().is_some())
    }
    // The deadline is read from the std clock outside a runtime: no timer is made.
    support::block_on_without_tokio(async {
        assert!(at_once().await.unwrap());
    });
}

#[tokio::test(start_paused = true)]
async fn the_builders_set_it_too() {
    let breaker = Breaker::builder("deadline-builder")
        .timeout(ms(800))
        .build()
        .unwrap();
    let left = breaker
        .call(async { Ok::<_, Rejected>(time_left()) })
        .await
        .unwrap();
    assert_eq!(left, Some(ms(800)));
    let race = resiliency::race_retry::RaceRetry::builder("deadline-builder-race")
        .retries(1)
        .after(ms(100))
        .total(ms(600))
        .register()
        .unwrap();
    let left = race
        .run(|| async { Ok::<_, Rejected>(time_left()) })
        .await
        .unwrap();
    assert_eq!(left, Some(ms(600)));
}

#[cfg(feature = "tower")]
mod tower_layers {
    use super::*;
    use resiliency::tower::{BreakerLayer, RaceRetryLayer};
    use tower::{Layer, Service, ServiceExt};

    #[tokio::test(start_paused = true)]
    async fn layers_set_the_deadline_of_the_inner_service() {
        let inner = tower::service_fn(|_: ()| async { Ok::<_, BoxError>(time_left()) });
        let breaker = BreakerLayer::new(Breaker::builder("deadline-layer").timeout(ms(700)))
            .unwrap()
            .layer(inner);
        let left = breaker.oneshot(()).await.unwrap();
        assert_eq!(left, Some(ms(700)));

        let inner = tower::service_fn(|_: ()| async { Ok::<_, BoxError>(time_left()) });
        let mut race = RaceRetryLayer::new(
            resiliency::race_retry::RaceRetry::builder("deadline-layer-race")
                .retries(1)
                .after(ms(100))
                .total(ms(900)),
        )
        .unwrap()
        .layer(inner);
        let left = race.ready().await.unwrap().call(()).await.unwrap();
        assert_eq!(left, Some(ms(900)));
    }
}
