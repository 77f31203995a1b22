//! The breaker's rules, one test per rule, through `#[breaker]` under paused tokio time.
//!
//! Every test has its own annotated fn with its own `name`: breakers are global per name.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::{Rejected, RejectedKind};
use tokio::time::{sleep, Instant};

use crate::support;
use support::{ms, rejected, secs, BoxError};

fn state(name: &str) -> State {
    breaker::get(name)
        .unwrap_or_else(|| panic!("breaker `{name}` is not registered"))
        .state()
}

fn snapshot(name: &str) -> breaker::Snapshot {
    breaker::get(name)
        .unwrap_or_else(|| panic!("breaker `{name}` is not registered"))
        .snapshot()
}

/// What a test body does: answer now, or after a delay, with success or an error.
async fn answer(delay: Duration, ok: bool) -> Result<u32, BoxError> {
    if !delay.is_zero() {
        sleep(delay).await;
    }
    if ok {
        Ok(7)
    } else {
        Err("upstream failed".into())
    }
}

/// Asserts that an open breaker stays open until exactly `after` from now, then half-opens.
async fn half_opens_after(name: &str, after: Duration) {
    let snap = snapshot(name);
    assert_eq!(snap.state, State::Open, "{name}: {snap:?}");
    assert_eq!(snap.half_opens_in, Some(after), "{name}: {snap:?}");
    sleep(after - ms(1)).await;
    assert_eq!(state(name), State::Open, "{name}: still open 1 ms before");
    sleep(ms(1)).await;
    assert_eq!(state(name), State::HalfOpen, "{name}: half-open on time");
}

// ---------------------------------------------------------------------------------------------
// Count rule

#[resiliency::breaker(
    name = "rules.count_opens",
    error_threshold = 3,
    error_window = "10s",
    error_timeout = "30s"
)]
async fn count_opens(ok: bool, ran: &AtomicUsize) -> Result<u32, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn count_rule_opens_on_the_nth_error_within_the_window() {
    const NAME: &str = "rules.count_opens";
    let ran = AtomicUsize::new(0);
    assert!(count_opens(false, &ran).await.is_err());
    sleep(secs(5)).await;
    assert!(count_opens(false, &ran).await.is_err());
    assert_eq!(state(NAME), State::Closed);
    assert_eq!(snapshot(NAME).recent_errors, 2);
    sleep(ms(4_999)).await; // the third error 9.999 s after the first: within the 10 s window
    let third = count_opens(false, &ran).await.unwrap_err();
    assert!(
        third.downcast_ref::<Rejected>().is_none(),
        "the body's own error comes back"
    );
    assert_eq!(state(NAME), State::Open);
    assert_eq!(ran.load(Ordering::SeqCst), 3);

    sleep(secs(10)).await;
    let refused = count_opens(true, &ran).await.unwrap_err();
    let refused = rejected(&refused);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        3,
        "an open breaker does not run the body"
    );
    assert_eq!(refused.kind(), RejectedKind::CircuitOpen);
    assert!(refused.is_circuit_open());
    assert!(!refused.is_timeout());
    assert_eq!(refused.name(), NAME);
    assert_eq!(refused.key(), None);
    assert_eq!(refused.retry_after(), Some(secs(20)));
    assert_eq!(
        refused.to_string(),
        "circuit breaker `rules.count_opens` is open; it half-opens in 20s"
    );
}

#[resiliency::breaker(
    name = "rules.count_spread",
    error_threshold = 3,
    error_window = "10s",
    error_timeout = "30s"
)]
async fn count_spread() -> Result<u32, BoxError> {
    answer(Duration::ZERO, false).await
}

#[tokio::test(start_paused = true)]
async fn count_rule_does_not_open_when_errors_are_spread_wider_than_the_window() {
    const NAME: &str = "rules.count_spread";
    // Errors 5.001 s apart: any three of them span 10.002 s, more than the 10 s window.
    for _ in 0..20 {
        let error = count_spread().await.unwrap_err();
        assert!(error.downcast_ref::<Rejected>().is_none(), "{error}");
        assert_eq!(state(NAME), State::Closed);
        assert!(snapshot(NAME).recent_errors <= 2, "{:?}", snapshot(NAME));
        sleep(ms(5_001)).await;
    }
    // Two more, closer together: now three fall within 10 s.
    sleep(ms(3_000)).await;
    assert!(count_spread().await.is_err());
    assert_eq!(
        state(NAME),
        State::Closed,
        "errors at -8.001 s and 0 s: two in the window"
    );
    assert!(count_spread().await.is_err());
    assert_eq!(state(NAME), State::Open);
}

#[resiliency::breaker(
    name = "rules.successes",
    error_threshold = 3,
    error_window = "1m",
    error_timeout = "30s"
)]
async fn successes(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn successes_between_errors_do_not_reset_the_count() {
    const NAME: &str = "rules.successes";
    assert!(successes(false).await.is_err());
    for _ in 0..10 {
        assert_eq!(successes(true).await.unwrap(), 7);
    }
    sleep(secs(1)).await;
    assert!(successes(false).await.is_err());
    for _ in 0..10 {
        assert_eq!(successes(true).await.unwrap(), 7);
    }
    assert_eq!(snapshot(NAME).recent_errors, 2);
    assert_eq!(state(NAME), State::Closed);
    assert!(successes(false).await.is_err());
    assert_eq!(state(NAME), State::Open);
    assert!(rejected(&successes(true).await.unwrap_err()).is_circuit_open());
}

// ---------------------------------------------------------------------------------------------
// Open time

#[resiliency::breaker(name = "rules.last_error", error_threshold = 2, error_timeout = "10s")]
async fn last_error(delay: Duration, ok: bool) -> Result<u32, BoxError> {
    answer(delay, ok).await
}

#[tokio::test(start_paused = true)]
async fn open_time_counts_from_the_last_error_even_of_a_call_in_flight() {
    const NAME: &str = "rules.last_error";
    let start = Instant::now();
    let (slow, ()) = tokio::join!(
        // Admitted while closed at t = 0; fails at t = 5 s, after the breaker opened.
        last_error(secs(5), false),
        async {
            sleep(secs(1)).await;
            assert!(last_error(Duration::ZERO, false).await.is_err());
            assert!(last_error(Duration::ZERO, false).await.is_err());
            assert_eq!(state(NAME), State::Open);
            assert_eq!(
                snapshot(NAME).half_opens_in,
                Some(secs(10)),
                "opened at t = 1 s"
            );
        },
    );
    assert_eq!(start.elapsed(), secs(5));
    let slow = slow.unwrap_err();
    assert!(
        slow.downcast_ref::<Rejected>().is_none(),
        "the body ran: {slow}"
    );
    // The late error moved the open time: half-open at t = 15 s, not t = 11 s.
    let snap = snapshot(NAME);
    assert_eq!(snap.state, State::Open);
    assert_eq!(snap.half_opens_in, Some(secs(10)));
    sleep(secs(6)).await; // t = 11 s
    let refused = last_error(Duration::ZERO, true).await.unwrap_err();
    assert_eq!(rejected(&refused).retry_after(), Some(secs(4)));
    half_opens_after(NAME, secs(4)).await; // t = 15 s
    assert_eq!(last_error(Duration::ZERO, true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::Closed);
}

#[resiliency::breaker(name = "rules.exact", error_threshold = 1, error_timeout = "30s")]
async fn exact(ok: bool, ran: &AtomicUsize) -> Result<u32, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn half_opens_after_error_timeout_exactly() {
    const NAME: &str = "rules.exact";
    let ran = AtomicUsize::new(0);
    assert!(exact(false, &ran).await.is_err());
    assert_eq!(state(NAME), State::Open);
    assert_eq!(snapshot(NAME).half_opens_in, Some(secs(30)));

    sleep(ms(29_999)).await;
    assert_eq!(state(NAME), State::Open);
    let refused = exact(true, &ran).await.unwrap_err();
    let refused = rejected(&refused);
    assert_eq!(refused.retry_after(), Some(ms(1)));
    assert_eq!(
        refused.to_string(),
        "circuit breaker `rules.exact` is open; it half-opens in 1ms"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    sleep(ms(1)).await;
    assert_eq!(state(NAME), State::HalfOpen);
    assert_eq!(snapshot(NAME).half_opens_in, None);
    assert_eq!(exact(true, &ran).await.unwrap(), 7);
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    assert_eq!(state(NAME), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// Half-open

#[resiliency::breaker(name = "rules.probe_error", error_threshold = 1, error_timeout = "5s")]
async fn probe_error(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn a_probe_error_reopens() {
    const NAME: &str = "rules.probe_error";
    assert!(probe_error(false).await.is_err());
    half_opens_after(NAME, secs(5)).await;
    let probe = probe_error(false).await.unwrap_err();
    assert!(
        probe.downcast_ref::<Rejected>().is_none(),
        "the probe ran: {probe}"
    );
    assert_eq!(state(NAME), State::Open);
    let refused = probe_error(true).await.unwrap_err();
    assert_eq!(rejected(&refused).retry_after(), Some(secs(5)));
    half_opens_after(NAME, secs(5)).await;
    assert_eq!(probe_error(true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::Closed);
}

#[resiliency::breaker(
    name = "rules.success_threshold",
    error_threshold = 1,
    error_timeout = "5s",
    success_threshold = 2
)]
async fn success_threshold(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn success_threshold_two_needs_two_successful_probes() {
    const NAME: &str = "rules.success_threshold";
    assert!(success_threshold(false).await.is_err());
    half_opens_after(NAME, secs(5)).await;
    assert_eq!(success_threshold(true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::HalfOpen, "one success is not enough");
    assert_eq!(success_threshold(true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::Closed);

    // A success then an error: re-opens, and the next half-open starts from zero successes.
    assert!(success_threshold(false).await.is_err());
    half_opens_after(NAME, secs(5)).await;
    assert_eq!(success_threshold(true).await.unwrap(), 7);
    assert!(success_threshold(false).await.is_err());
    assert_eq!(state(NAME), State::Open);
    half_opens_after(NAME, secs(5)).await;
    assert_eq!(success_threshold(true).await.unwrap(), 7);
    assert_eq!(
        state(NAME),
        State::HalfOpen,
        "the earlier success does not carry over"
    );
    assert_eq!(success_threshold(true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::Closed);
}

#[resiliency::breaker(
    name = "rules.half_open_calls",
    error_threshold = 1,
    error_timeout = "5s",
    half_open_calls = 1
)]
async fn one_probe(delay: Duration, ok: bool, ran: &AtomicUsize) -> Result<u32, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    answer(delay, ok).await
}

#[tokio::test(start_paused = true)]
async fn half_open_calls_one_refuses_a_second_concurrent_probe() {
    const NAME: &str = "rules.half_open_calls";
    let ran = AtomicUsize::new(0);
    assert!(one_probe(Duration::ZERO, false, &ran).await.is_err());
    half_opens_after(NAME, secs(5)).await;
    let (first, ()) = tokio::join!(one_probe(secs(2), true, &ran), async {
        sleep(ms(10)).await;
        assert_eq!(state(NAME), State::HalfOpen);
        let second = one_probe(Duration::ZERO, true, &ran).await.unwrap_err();
        let second = rejected(&second);
        assert_eq!(second.kind(), RejectedKind::CircuitHalfOpen);
        assert!(second.is_circuit_open());
        assert_eq!(second.name(), NAME);
        assert_eq!(second.retry_after(), None);
        assert_eq!(
            second.to_string(),
            "circuit breaker `rules.half_open_calls` is half-open and its probe calls are in flight"
        );
    });
    assert_eq!(first.unwrap(), 7);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        2,
        "the refused call did not run"
    );
    assert_eq!(state(NAME), State::Closed);
}

#[resiliency::breaker(
    name = "rules.half_open_calls_2",
    error_threshold = 1,
    error_timeout = "5s",
    half_open_calls = 2,
    success_threshold = 2
)]
async fn two_probes(delay: Duration, ok: bool) -> Result<u32, BoxError> {
    answer(delay, ok).await
}

#[tokio::test(start_paused = true)]
async fn half_open_calls_two_runs_two_probes_at_once_and_refuses_a_third() {
    const NAME: &str = "rules.half_open_calls_2";
    assert!(two_probes(Duration::ZERO, false).await.is_err());
    half_opens_after(NAME, secs(5)).await;
    let (a, b, c) = tokio::join!(
        two_probes(secs(1), true),
        two_probes(secs(2), true),
        async {
            sleep(ms(10)).await;
            two_probes(Duration::ZERO, true).await
        }
    );
    assert_eq!(a.unwrap(), 7);
    assert_eq!(b.unwrap(), 7);
    assert_eq!(
        rejected(&c.unwrap_err()).kind(),
        RejectedKind::CircuitHalfOpen
    );
    assert_eq!(state(NAME), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// Timeouts

/// Sets its flag when dropped: shows that an abandoned body's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[resiliency::breaker(
    name = "rules.timeout",
    error_threshold = 2,
    error_timeout = "10s",
    timeout = "2s"
)]
async fn slow(dropped: Arc<AtomicBool>, finished: Arc<AtomicBool>) -> Result<u32, BoxError> {
    let _guard = DropFlag(dropped);
    sleep(secs(60)).await;
    finished.store(true, Ordering::SeqCst);
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn timeout_abandons_a_slow_call_and_counts_it_as_an_error() {
    const NAME: &str = "rules.timeout";
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let error = slow(dropped.clone(), finished.clone()).await.unwrap_err();
    assert_eq!(start.elapsed(), secs(2), "abandoned at the timeout exactly");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the body's future was dropped"
    );
    let timeout = rejected(&error);
    assert_eq!(timeout.kind(), RejectedKind::Timeout);
    assert!(timeout.is_timeout());
    assert!(!timeout.is_circuit_open());
    assert_eq!(timeout.name(), NAME);
    assert_eq!(timeout.key(), None);
    assert_eq!(timeout.retry_after(), None);
    assert_eq!(
        timeout.to_string(),
        "call through circuit breaker `rules.timeout` timed out after 2s"
    );
    assert_eq!(
        snapshot(NAME).recent_errors,
        1,
        "the timeout counts as an error"
    );
    assert_eq!(state(NAME), State::Closed);

    let second = slow(Arc::default(), finished.clone()).await.unwrap_err();
    assert!(rejected(&second).is_timeout());
    assert_eq!(state(NAME), State::Open, "two timeouts open it");
    assert!(rejected(&slow(Arc::default(), finished.clone()).await.unwrap_err()).is_circuit_open());

    sleep(secs(120)).await;
    assert!(
        !finished.load(Ordering::SeqCst),
        "an abandoned body never resumes"
    );
}

#[resiliency::breaker(
    name = "rules.half_open_timeout",
    error_threshold = 1,
    error_timeout = "5s",
    timeout = "10s",
    half_open_timeout = "1s"
)]
async fn bounded(delay: Duration, ok: bool) -> Result<u32, BoxError> {
    answer(delay, ok).await
}

#[tokio::test(start_paused = true)]
async fn half_open_timeout_bounds_probes_with_the_shorter_time() {
    const NAME: &str = "rules.half_open_timeout";
    let start = Instant::now();
    assert_eq!(
        bounded(secs(5), true).await.unwrap(),
        7,
        "closed calls get `timeout`"
    );
    assert_eq!(start.elapsed(), secs(5));
    assert!(bounded(Duration::ZERO, false).await.is_err());
    half_opens_after(NAME, secs(5)).await;

    let start = Instant::now();
    let probe = bounded(secs(5), true).await.unwrap_err();
    assert_eq!(
        start.elapsed(),
        secs(1),
        "the probe gets `half_open_timeout`"
    );
    let probe = rejected(&probe);
    assert!(probe.is_timeout());
    assert_eq!(
        probe.to_string(),
        "call through circuit breaker `rules.half_open_timeout` timed out after 1s"
    );
    assert_eq!(state(NAME), State::Open, "a timed-out probe re-opens");
    half_opens_after(NAME, secs(5)).await;

    let start = Instant::now();
    assert_eq!(bounded(ms(900), true).await.unwrap(), 7);
    assert_eq!(start.elapsed(), ms(900));
    assert_eq!(state(NAME), State::Closed);
    assert_eq!(
        bounded(secs(9), true).await.unwrap(),
        7,
        "closed again: `timeout` applies"
    );
    let start = Instant::now();
    assert!(rejected(&bounded(secs(11), true).await.unwrap_err()).is_timeout());
    assert_eq!(start.elapsed(), secs(10));
}

// ---------------------------------------------------------------------------------------------
// Rate rule

#[resiliency::breaker(
    name = "rules.rate_min_calls",
    failure_rate = 0.5,
    min_calls = 4,
    error_window = "10s",
    error_timeout = "30s"
)]
async fn rate_min_calls(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn rate_rule_does_not_open_below_min_calls() {
    const NAME: &str = "rules.rate_min_calls";
    for _ in 0..3 {
        assert!(rate_min_calls(false).await.is_err());
    }
    let snap = snapshot(NAME);
    assert_eq!(
        snap.state,
        State::Closed,
        "100% errors, but 3 calls < min_calls 4"
    );
    assert_eq!(snap.recent_errors, 3);
    assert_eq!(snap.recent_calls, Some(3));
    // Calls older than the window no longer count towards min_calls.
    sleep(secs(11)).await;
    assert_eq!(snapshot(NAME).recent_calls, Some(0));
    for _ in 0..3 {
        assert!(rate_min_calls(false).await.is_err());
    }
    assert_eq!(state(NAME), State::Closed);
    assert!(rate_min_calls(false).await.is_err());
    assert_eq!(
        state(NAME),
        State::Open,
        "the 4th call within the window opens it"
    );
}

#[resiliency::breaker(
    name = "rules.rate_reached",
    failure_rate = 0.5,
    min_calls = 4,
    error_window = "10s",
    error_timeout = "30s"
)]
async fn rate_reached(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn rate_rule_opens_when_the_rate_is_reached() {
    const NAME: &str = "rules.rate_reached";
    for _ in 0..3 {
        assert_eq!(rate_reached(true).await.unwrap(), 7);
    }
    assert!(rate_reached(false).await.is_err()); // 1 / 4
    assert!(rate_reached(false).await.is_err()); // 2 / 5
    let snap = snapshot(NAME);
    assert_eq!(snap.state, State::Closed);
    assert_eq!((snap.recent_errors, snap.recent_calls), (2, Some(5)));
    assert!(rate_reached(false).await.is_err()); // 3 / 6 = 0.5
    assert_eq!(state(NAME), State::Open);
    assert!(rejected(&rate_reached(true).await.unwrap_err()).is_circuit_open());
}

#[resiliency::breaker(
    name = "rules.rate_success",
    failure_rate = 0.5,
    min_calls = 4,
    error_window = "10s",
    error_timeout = "30s"
)]
async fn rate_success(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn rate_rule_a_success_never_opens_it() {
    const NAME: &str = "rules.rate_success";
    for _ in 0..3 {
        assert!(rate_success(false).await.is_err());
    }
    // 3 errors in 4 calls is above the rate with enough calls, but a success does not trip it.
    assert_eq!(rate_success(true).await.unwrap(), 7);
    let snap = snapshot(NAME);
    assert_eq!(snap.state, State::Closed);
    assert_eq!((snap.recent_errors, snap.recent_calls), (3, Some(4)));
    assert_eq!(rate_success(true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::Closed);
    assert!(rate_success(false).await.is_err()); // 4 / 6
    assert_eq!(state(NAME), State::Open);
}

// ---------------------------------------------------------------------------------------------
// Backoff

#[resiliency::breaker(
    name = "rules.backoff",
    error_threshold = 1,
    error_timeout = "1s",
    backoff = 2.0,
    max_error_timeout = "5s"
)]
async fn backoff(ok: bool) -> Result<u32, BoxError> {
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_the_open_time_after_each_failed_probe_up_to_the_cap() {
    const NAME: &str = "rules.backoff";
    assert!(backoff(false).await.is_err());
    assert_eq!(snapshot(NAME).open_for, secs(1));
    half_opens_after(NAME, secs(1)).await;
    for expected in [2, 4, 5, 5] {
        assert!(backoff(false).await.is_err(), "the probe fails");
        assert_eq!(snapshot(NAME).open_for, secs(expected));
        half_opens_after(NAME, secs(expected)).await;
    }
    assert_eq!(backoff(true).await.unwrap(), 7);
    assert_eq!(state(NAME), State::Closed);
    assert_eq!(
        snapshot(NAME).open_for,
        secs(1),
        "a close resets the open time"
    );
    assert!(backoff(false).await.is_err());
    half_opens_after(NAME, secs(1)).await;
    assert!(backoff(false).await.is_err());
    half_opens_after(NAME, secs(2)).await;
}

/// The count of failed probes in a row saturates (at 255) rather than spill into the rest of the
/// state: after 300 failed probes the open time is still the cap, a successful probe still closes
/// the breaker, and it then counts errors as a fresh one does.
#[tokio::test(start_paused = true)]
async fn backoff_after_hundreds_of_failed_probes_stays_at_the_cap_and_still_closes() {
    let b = resiliency::Breaker::builder("rules.backoff.saturated")
        .error_threshold(1)
        .error_timeout(ms(1))
        .backoff(2.0)
        .max_error_timeout(ms(50))
        .build()
        .unwrap();
    let fail = || b.call(async { Err::<(), BoxError>("down".into()) });
    assert!(fail().await.is_err());
    for probe in 0..300 {
        sleep(b.snapshot().open_for).await;
        assert_eq!(b.state(), State::HalfOpen, "probe {probe}");
        assert!(fail().await.is_err());
        assert_eq!(b.state(), State::Open, "probe {probe}");
        assert_eq!(
            b.snapshot().open_for,
            ms(50).min(ms(1 << (probe + 1).min(20)))
        );
    }
    sleep(ms(50)).await;
    assert!(b.call(async { Ok::<_, BoxError>(()) }).await.is_ok());
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().open_for, ms(1), "a close resets the open time");
    assert!(fail().await.is_err());
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.snapshot().half_opens_in, Some(ms(1)));
}

// ---------------------------------------------------------------------------------------------
// count_if

#[derive(Debug)]
enum DbError {
    Transient,
    NotFound,
    Unavailable(Rejected),
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Transient => f.write_str("transient failure"),
            DbError::NotFound => f.write_str("not found"),
            DbError::Unavailable(r) => write!(f, "unavailable: {r}"),
        }
    }
}

impl std::error::Error for DbError {}

impl From<Rejected> for DbError {
    fn from(r: Rejected) -> Self {
        DbError::Unavailable(r)
    }
}

fn is_transient(error: &DbError) -> bool {
    matches!(error, DbError::Transient)
}

#[derive(Copy, Clone, Debug)]
enum Outcome {
    Ok,
    Transient,
    NotFound,
}

async fn db(outcome: Outcome, delay: Duration) -> Result<u32, DbError> {
    sleep(delay).await;
    match outcome {
        Outcome::Ok => Ok(1),
        Outcome::Transient => Err(DbError::Transient),
        Outcome::NotFound => Err(DbError::NotFound),
    }
}

#[resiliency::breaker(
    name = "rules.count_if",
    error_threshold = 2,
    error_timeout = "5s",
    count_if = is_transient
)]
async fn counted(outcome: Outcome, delay: Duration) -> Result<u32, DbError> {
    db(outcome, delay).await
}

#[tokio::test(start_paused = true)]
async fn count_if_uncounted_errors_neither_open_nor_close_and_free_the_probe() {
    const NAME: &str = "rules.count_if";
    for _ in 0..10 {
        assert!(matches!(
            counted(Outcome::NotFound, Duration::ZERO).await,
            Err(DbError::NotFound)
        ));
    }
    assert_eq!(state(NAME), State::Closed, "uncounted errors do not open");
    assert_eq!(snapshot(NAME).recent_errors, 0);
    assert!(matches!(
        counted(Outcome::Transient, Duration::ZERO).await,
        Err(DbError::Transient)
    ));
    assert!(matches!(
        counted(Outcome::NotFound, Duration::ZERO).await,
        Err(DbError::NotFound)
    ));
    assert!(matches!(
        counted(Outcome::Transient, Duration::ZERO).await,
        Err(DbError::Transient)
    ));
    assert_eq!(state(NAME), State::Open);
    match counted(Outcome::Ok, Duration::ZERO).await {
        Err(DbError::Unavailable(r)) => {
            assert_eq!(r.kind(), RejectedKind::CircuitOpen);
            assert_eq!(r.name(), NAME);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    half_opens_after(NAME, secs(5)).await;
    // An uncounted error from the probe: neither closes nor re-opens.
    assert!(matches!(
        counted(Outcome::NotFound, Duration::ZERO).await,
        Err(DbError::NotFound)
    ));
    assert_eq!(state(NAME), State::HalfOpen);
    // ... and it freed the probe slot, also while another call is in flight.
    let (probe, ()) = tokio::join!(counted(Outcome::NotFound, secs(1)), async {
        sleep(ms(10)).await;
        match counted(Outcome::Ok, Duration::ZERO).await {
            Err(DbError::Unavailable(r)) => assert_eq!(r.kind(), RejectedKind::CircuitHalfOpen),
            other => panic!("the slot is taken, got {other:?}"),
        }
    });
    assert!(matches!(probe, Err(DbError::NotFound)));
    assert_eq!(state(NAME), State::HalfOpen);
    assert_eq!(counted(Outcome::Ok, Duration::ZERO).await.unwrap(), 1);
    assert_eq!(state(NAME), State::Closed);
}

#[resiliency::breaker(
    name = "rules.count_if_closure",
    error_threshold = 1,
    error_timeout = "5s",
    count_if = |e: &DbError| !matches!(e, DbError::NotFound)
)]
async fn counted_by_closure(outcome: Outcome) -> Result<u32, DbError> {
    db(outcome, Duration::ZERO).await
}

#[tokio::test(start_paused = true)]
async fn count_if_takes_a_closure() {
    const NAME: &str = "rules.count_if_closure";
    assert!(matches!(
        counted_by_closure(Outcome::NotFound).await,
        Err(DbError::NotFound)
    ));
    assert_eq!(state(NAME), State::Closed);
    assert!(matches!(
        counted_by_closure(Outcome::Transient).await,
        Err(DbError::Transient)
    ));
    assert_eq!(state(NAME), State::Open);
}

// ---------------------------------------------------------------------------------------------
// Forcing from code

#[resiliency::breaker(name = "rules.forced", error_threshold = 1, error_timeout = "60s")]
async fn forced(ok: bool, ran: &AtomicUsize) -> Result<u32, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    answer(Duration::ZERO, ok).await
}

#[tokio::test(start_paused = true)]
async fn force_open_force_closed_and_reset_through_get() {
    const NAME: &str = "rules.forced";
    let ran = AtomicUsize::new(0);
    assert!(
        breaker::get(NAME).is_none(),
        "a site registers on its first call"
    );
    assert_eq!(forced(true, &ran).await.unwrap(), 7);
    let b = breaker::get(NAME).expect("registered by the first call");
    assert_eq!(b.name(), NAME);

    b.force_open();
    assert_eq!(b.state(), State::ForcedOpen);
    let refused = forced(true, &ran).await.unwrap_err();
    let refused = rejected(&refused);
    assert_eq!(refused.kind(), RejectedKind::CircuitOpen);
    assert_eq!(refused.retry_after(), None);
    assert_eq!(
        refused.to_string(),
        "circuit breaker `rules.forced` is forced open"
    );
    sleep(secs(3600)).await;
    assert!(
        forced(true, &ran).await.is_err(),
        "forced open does not time out"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    b.reset();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(forced(true, &ran).await.unwrap(), 7);

    b.force_closed();
    assert_eq!(b.state(), State::ForcedClosed);
    for _ in 0..5 {
        let error = forced(false, &ran).await.unwrap_err();
        assert!(
            error.downcast_ref::<Rejected>().is_none(),
            "the body ran: {error}"
        );
    }
    assert_eq!(b.state(), State::ForcedClosed);
    assert_eq!(
        b.snapshot().recent_errors,
        0,
        "nothing is counted while forced closed"
    );

    b.reset();
    assert_eq!(b.state(), State::Closed);
    assert!(forced(false, &ran).await.is_err());
    assert_eq!(b.state(), State::Open, "counting resumes after reset");
    sleep(ms(1)).await;
    b.reset();
    assert_eq!(b.state(), State::Closed, "reset closes an open breaker");
    assert_eq!(b.snapshot().recent_errors, 0);
    assert_eq!(forced(true, &ran).await.unwrap(), 7);
    assert_eq!(ran.load(Ordering::SeqCst), 9);
}

#[resiliency::breaker(
    name = "rules.reset_same_instant",
    error_threshold = 2,
    error_timeout = "60s"
)]
async fn reset_same_instant() -> Result<u32, BoxError> {
    answer(Duration::ZERO, false).await
}

/// `reset` "forgets every counted error", including one counted at the very instant of the reset
/// (under paused time, or a coarse clock, the next error can share that instant too).
#[tokio::test(start_paused = true)]
async fn reset_forgets_an_error_counted_at_the_same_instant() {
    const NAME: &str = "rules.reset_same_instant";
    assert!(reset_same_instant().await.is_err());
    let b = breaker::get(NAME).unwrap();
    assert_eq!(b.snapshot().recent_errors, 1);
    b.reset();
    assert!(reset_same_instant().await.is_err());
    assert_eq!(
        b.state(),
        State::Closed,
        "one error since the reset, threshold 2"
    );
    assert_eq!(b.snapshot().recent_errors, 1);
}

// ---------------------------------------------------------------------------------------------
// Error types

#[resiliency::breaker(name = "rules.box_error", error_threshold = 1, error_timeout = "1s")]
async fn box_error(ok: bool) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    if ok {
        Ok(1)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ))?
    }
}

#[resiliency::breaker(name = "rules.anyhow_error", error_threshold = 1, error_timeout = "1s")]
async fn anyhow_error(ok: bool) -> anyhow::Result<u32> {
    anyhow::ensure!(ok, "upstream failed");
    Ok(1)
}

#[resiliency::breaker(name = "rules.enum_error", error_threshold = 1, error_timeout = "1s")]
async fn enum_error(ok: bool) -> Result<u32, DbError> {
    if ok {
        Ok(1)
    } else {
        Err(DbError::Transient)
    }
}

#[tokio::test(start_paused = true)]
async fn error_types_box_dyn_error_anyhow_and_a_custom_enum() {
    // Box<dyn Error + Send + Sync>
    let io = box_error(false).await.unwrap_err();
    assert!(io.downcast_ref::<std::io::Error>().is_some());
    let refused = box_error(true).await.unwrap_err();
    assert_eq!(rejected(&refused).name(), "rules.box_error");

    // anyhow::Error
    let failed = anyhow_error(false).await.unwrap_err();
    assert!(failed.downcast_ref::<Rejected>().is_none());
    assert_eq!(failed.to_string(), "upstream failed");
    let refused = anyhow_error(true).await.unwrap_err();
    let refused = refused
        .downcast_ref::<Rejected>()
        .expect("a Rejected inside anyhow");
    assert_eq!(refused.kind(), RejectedKind::CircuitOpen);
    assert_eq!(refused.name(), "rules.anyhow_error");

    // A custom enum with From<Rejected>
    assert!(matches!(enum_error(false).await, Err(DbError::Transient)));
    match enum_error(true).await {
        Err(DbError::Unavailable(r)) => {
            assert_eq!(r.name(), "rules.enum_error");
            assert_eq!(r.retry_after(), Some(secs(1)));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    sleep(secs(1)).await;
    assert_eq!(box_error(true).await.unwrap(), 1);
    assert_eq!(anyhow_error(true).await.unwrap(), 1);
    assert_eq!(enum_error(true).await.unwrap(), 1);
}

// ---------------------------------------------------------------------------------------------
// Cancellation

#[resiliency::breaker(
    name = "rules.cancelled_probe",
    error_threshold = 1,
    error_timeout = "5s",
    half_open_calls = 1
)]
async fn cancelled_probe(
    delay: Duration,
    ok: bool,
    dropped: Arc<AtomicBool>,
) -> Result<u32, BoxError> {
    let _guard = DropFlag(dropped);
    answer(delay, ok).await
}

#[tokio::test(start_paused = true)]
async fn a_dropped_probe_future_frees_the_probe_slot() {
    const NAME: &str = "rules.cancelled_probe";
    assert!(cancelled_probe(Duration::ZERO, false, Arc::default())
        .await
        .is_err());
    half_opens_after(NAME, secs(5)).await;

    let dropped = Arc::new(AtomicBool::new(false));
    let (cancelled, ()) = tokio::join!(
        tokio::time::timeout(secs(1), cancelled_probe(secs(60), true, dropped.clone())),
        async {
            sleep(ms(10)).await;
            let busy = cancelled_probe(Duration::ZERO, true, Arc::default())
                .await
                .unwrap_err();
            assert_eq!(
                rejected(&busy).kind(),
                RejectedKind::CircuitHalfOpen,
                "the slot is taken"
            );
        },
    );
    assert!(cancelled.is_err(), "the caller gave up on the probe");
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(
        state(NAME),
        State::HalfOpen,
        "a cancelled probe neither closes nor re-opens"
    );

    assert_eq!(
        cancelled_probe(Duration::ZERO, true, Arc::default())
            .await
            .unwrap(),
        7,
        "the slot is free again"
    );
    assert_eq!(state(NAME), State::Closed);
}
