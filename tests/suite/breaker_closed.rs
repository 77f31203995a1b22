//! `#[breaker]` calls of a closed breaker, the common case: admitted with one read of the state
//! word, which also says the rule and whether a timeout applies, so that a setting that changes
//! either reaches the site's next call. These tests hold closed calls to the same guarantees as
//! every other call: a panic counts as an error and reaches the caller, a cancelled call counts
//! nothing, the rate rule counts every success, a timeout bounds a call only when one is in force,
//! and a site follows its breaker's state and settings as they change.
#![allow(clippy::await_holding_lock)]

use std::pin::pin;
use std::time::Duration;

use resiliency::breaker::get as breaker_named;
use resiliency::breaker::State;
use resiliency::settings::{self, Policy};
use resiliency::{breaker, RejectedKind};
use tokio::time::sleep;

use crate::support;
use support::{ms, poll_once, rejected, serial, BoxError};

#[breaker(name = "closed::panics", error_threshold = 2, error_timeout = "10s")]
async fn panics(wait: bool) -> Result<u32, BoxError> {
    if wait {
        sleep(ms(1)).await;
    }
    explode()
}

fn explode() -> Result<u32, BoxError> {
    panic!("the body panics")
}

/// A panic at the first poll and one after a wait both count as errors, and the caller sees each
/// panic's own payload.
#[tokio::test(start_paused = true)]
async fn a_panicking_body_counts_as_an_error_and_the_caller_sees_the_panic() {
    for wait in [false, true] {
        let call = tokio::spawn(panics(wait));
        let payload = call.await.unwrap_err().into_panic();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the body panics"));
    }
    let b = breaker_named("closed::panics").unwrap();
    assert_eq!(b.state(), State::Open, "two panics are two errors");
}

#[breaker(name = "closed::cancelled", error_threshold = 1, error_timeout = "10s")]
async fn slow_failure() -> Result<u32, BoxError> {
    sleep(ms(100)).await;
    Err("down".into())
}

/// A call dropped while its body waits counts neither way: the breaker stays closed with no error.
#[tokio::test(start_paused = true)]
async fn a_cancelled_call_counts_nothing() {
    {
        let mut call = pin!(slow_failure());
        assert!(poll_once(call.as_mut()).await.is_pending());
    }
    let b = breaker_named("closed::cancelled").unwrap();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().recent_errors, 0);
    // The same call left to finish counts its error, and opens the breaker.
    assert!(slow_failure().await.is_err());
    assert_eq!(b.state(), State::Open);
}

/// An error when `fail`, else 7.
fn outcome(fail: bool) -> Result<u32, BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(7)
    }
}

#[breaker(name = "closed::count", error_threshold = 3, error_timeout = "1s")]
async fn count_site(fail: bool) -> Result<u32, BoxError> {
    outcome(fail)
}

/// Errors of closed calls open the breaker; the open breaker refuses, lets a probe through, and
/// once closed again admits calls as before.
#[tokio::test(start_paused = true)]
async fn a_site_follows_its_breaker_through_open_half_open_and_closed() {
    for _ in 0..2 {
        assert!(count_site(true).await.is_err());
    }
    assert_eq!(
        count_site(false).await.unwrap(),
        7,
        "a success resets nothing"
    );
    let b = breaker_named("closed::count").unwrap();
    assert_eq!(b.snapshot().recent_errors, 2);
    assert!(count_site(true).await.is_err());
    assert_eq!(b.state(), State::Open);
    let refused = count_site(false).await.unwrap_err();
    assert_eq!(rejected(&refused).kind(), RejectedKind::CircuitOpen);
    sleep(Duration::from_secs(1)).await;
    assert_eq!(count_site(false).await.unwrap(), 7, "the probe succeeds");
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().recent_errors, 0, "closed with a clean window");
    assert!(count_site(true).await.is_err());
    assert_eq!(b.snapshot().recent_errors, 1);
}

#[breaker(
    name = "closed::rate",
    failure_rate = 0.5,
    min_calls = 10,
    error_timeout = "10s"
)]
async fn rate_site(fail: bool) -> Result<u32, BoxError> {
    outcome(fail)
}

/// Makes 100 successful calls of `call`, more than a batch of them, and checks that the breaker
/// `name` counted them all.
async fn hundred_successes<F, Fut>(name: &str, call: F) -> std::sync::Arc<resiliency::Breaker>
where
    F: Fn(bool) -> Fut,
    Fut: std::future::Future<Output = Result<u32, BoxError>>,
{
    for _ in 0..100 {
        call(false).await.unwrap();
    }
    let b = breaker_named(name).unwrap();
    assert_eq!(b.snapshot().recent_calls, Some(100));
    b
}

/// The rate rule counts every success of closed calls, and opens at its failure rate.
#[tokio::test(start_paused = true)]
async fn the_rate_rule_counts_every_success_of_closed_calls() {
    let b = hundred_successes("closed::rate", rate_site).await;
    for i in 0..99 {
        assert!(rate_site(true).await.is_err());
        assert_eq!(b.state(), State::Closed, "after {} errors", i + 1);
    }
    assert!(rate_site(true).await.is_err());
    assert_eq!(b.state(), State::Open, "100 errors in 200 calls");
}

#[breaker(
    name = "closed::rate_threads",
    failure_rate = 0.5,
    min_calls = 10,
    error_timeout = "10s"
)]
async fn rate_threads_site(fail: bool) -> Result<u32, BoxError> {
    outcome(fail)
}

/// Under the rate rule, the successes of threads that come and go all count, once: more threads
/// alive at once than the window has stripes of their own (the rest share one), then threads one
/// after another, each taking the stripe of one that ended.
#[test]
fn the_rate_rule_counts_the_successes_of_threads_that_come_and_go() {
    let calls = |n: u64| {
        for _ in 0..n {
            futures::executor::block_on(rate_threads_site(false)).unwrap();
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..40 {
            scope.spawn(|| calls(100));
        }
    });
    for _ in 0..30 {
        std::thread::spawn(move || calls(100)).join().unwrap();
    }
    let b = breaker_named("closed::rate_threads").unwrap();
    assert_eq!(b.snapshot().recent_calls, Some(70 * 100));
    assert_eq!(b.state(), State::Closed);
}

#[breaker(name = "closed::switch", error_threshold = 50, error_timeout = "10s")]
async fn switch_site(wait: Duration) -> Result<u32, BoxError> {
    sleep(wait).await;
    Ok(7)
}

/// A setting that gives the site the rate rule makes its calls' successes count; a setting that
/// gives it a timeout bounds them; unset, the site is back to its own options.
#[tokio::test(start_paused = true)]
async fn settings_that_change_the_rule_or_add_a_timeout_reach_the_site() {
    let _serial = serial();
    let site = "closed::switch";
    switch_site(Duration::ZERO).await.unwrap();
    let b = breaker_named(site).unwrap();
    assert_eq!(
        b.snapshot().recent_calls,
        None,
        "the count rule counts no successes"
    );

    settings::set(Policy::Breaker, site, "failure_rate", "0.5").unwrap();
    for _ in 0..3 {
        switch_site(Duration::ZERO).await.unwrap();
    }
    assert_eq!(b.snapshot().recent_calls, Some(3));

    settings::unset(Policy::Breaker, site, "failure_rate").unwrap();
    settings::set(Policy::Breaker, site, "timeout", "50ms").unwrap();
    let timed_out = switch_site(ms(200)).await.unwrap_err();
    assert_eq!(rejected(&timed_out).kind(), RejectedKind::Timeout);
    assert_eq!(switch_site(ms(20)).await.unwrap(), 7, "within the timeout");

    settings::unset(Policy::Breaker, site, "timeout").unwrap();
    assert_eq!(
        switch_site(ms(200)).await.unwrap(),
        7,
        "no timeout any more"
    );
    assert_eq!(b.snapshot().recent_errors, 1, "the timeout was an error");
}

#[breaker(name = "closed::forced", error_threshold = 1, error_timeout = "10s")]
async fn forced_site() -> Result<u32, BoxError> {
    Ok(7)
}

/// A forced breaker is not closed: forced open refuses, forced closed runs and counts nothing.
#[tokio::test]
async fn a_forced_breaker_refuses_or_counts_nothing() {
    forced_site().await.unwrap();
    let b = breaker_named("closed::forced").unwrap();
    b.force_open();
    let refused = forced_site().await.unwrap_err();
    assert_eq!(rejected(&refused).kind(), RejectedKind::CircuitOpen);
    b.force_closed();
    assert_eq!(forced_site().await.unwrap(), 7);
    b.reset();
    assert_eq!(forced_site().await.unwrap(), 7);
}

/// A call with no timeout in force makes no timer: it runs on a runtime without a time driver.
#[test]
fn an_untimed_call_runs_without_a_time_driver() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(no_timer_site()).unwrap(), 7);
    assert!(runtime.block_on(no_timer_failure()).is_err());
    let b = breaker_named("closed::no_timer").unwrap();
    assert_eq!(b.snapshot().recent_errors, 1);
}

#[breaker(name = "closed::no_timer", error_threshold = 5)]
async fn no_timer_site() -> Result<u32, BoxError> {
    tokio::task::yield_now().await;
    Ok(7)
}

#[breaker(name = "closed::no_timer", error_threshold = 5)]
async fn no_timer_failure() -> Result<u32, BoxError> {
    Err("down".into())
}

#[breaker(name = "closed::timed", timeout = "50ms", error_threshold = 5)]
async fn timed_site(wait: Duration, panic: bool) -> Result<u32, BoxError> {
    sleep(wait).await;
    if panic {
        return explode();
    }
    Ok(7)
}

/// A site with a timeout: a call that answers in time succeeds, one that waits past the timeout
/// ends with a timeout refusal and counts as an error, a panic after a wait counts as an error;
/// the timeout follows its setting.
#[tokio::test(start_paused = true)]
async fn a_timed_site_bounds_calls_and_counts_their_end() {
    let _serial = serial();
    assert_eq!(timed_site(ms(20), false).await.unwrap(), 7);
    let b = breaker_named("closed::timed").unwrap();
    let timed_out = timed_site(ms(200), false).await.unwrap_err();
    assert_eq!(rejected(&timed_out).kind(), RejectedKind::Timeout);
    assert_eq!(b.snapshot().recent_errors, 1);
    let payload = tokio::spawn(timed_site(ms(1), true))
        .await
        .unwrap_err()
        .into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"the body panics"));
    assert_eq!(b.snapshot().recent_errors, 2);

    settings::set(Policy::Breaker, "closed::timed", "timeout", "off").unwrap();
    assert_eq!(
        timed_site(ms(200), false).await.unwrap(),
        7,
        "no timeout any more"
    );
    settings::set(Policy::Breaker, "closed::timed", "timeout", "100ms").unwrap();
    assert_eq!(timed_site(ms(80), false).await.unwrap(), 7);
    let timed_out = timed_site(ms(150), false).await.unwrap_err();
    assert_eq!(rejected(&timed_out).kind(), RejectedKind::Timeout);
    settings::unset(Policy::Breaker, "closed::timed", "timeout").unwrap();
    assert_eq!(b.snapshot().recent_errors, 3);
}

#[breaker(
    name = "closed::timed_rate",
    timeout = "1s",
    failure_rate = 0.5,
    min_calls = 10,
    error_timeout = "10s"
)]
async fn timed_rate_site(fail: bool) -> Result<u32, BoxError> {
    outcome(fail)
}

/// The rate rule with a timeout counts every success of closed calls too.
#[tokio::test]
async fn the_timed_rate_rule_counts_every_success_of_closed_calls() {
    let b = hundred_successes("closed::timed_rate", timed_rate_site).await;
    assert!(timed_rate_site(true).await.is_err());
    assert_eq!(b.snapshot().recent_calls, Some(101));
    assert_eq!(b.snapshot().recent_errors, 1);
}

#[breaker(name = "closed::timed_no_driver", timeout = "1s")]
async fn timed_no_driver(wait: bool) -> Result<u32, BoxError> {
    if wait {
        tokio::task::yield_now().await;
    }
    Ok(7)
}

/// With a timeout, a call that answers at once needs no timer and runs without a time driver; one
/// that waits there panics with tokio's message at its first wait, and the breaker stays closed.
#[test]
fn a_timed_site_without_a_time_driver() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(timed_no_driver(false)).unwrap(), 7);
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(timed_no_driver(true))
    }));
    let payload = waited.unwrap_err();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or(payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(message.contains("timers are disabled"), "{message}");
    let b = breaker_named("closed::timed_no_driver").unwrap();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().recent_errors, 0);
    assert_eq!(runtime.block_on(timed_no_driver(false)).unwrap(), 7);
}
