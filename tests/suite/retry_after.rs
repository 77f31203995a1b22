//! Retry-After: an error that says how long its upstream asked callers to wait (`RetryHint`)
//! keeps an opening breaker open at least that long (up to `max_error_timeout`), and delays a
//! race's next attempt (never past `total`); the attributes read the hint of any error type that
//! implements the trait, with nothing to write; the `tower` breaker reads `Retry-After` headers.

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use futures::FutureExt as _;
use resiliency::breaker::State;
use resiliency::race_retry::{observe, Outcome};
use resiliency::{breaker, race_retry, Rejected, RetryHint};
use support::{ms, secs};

#[derive(Debug)]
enum ApiError {
    /// A 429 or 503 with `Retry-After`.
    Throttled(Duration),
    Down,
    Refused(Rejected),
}

impl From<Rejected> for ApiError {
    fn from(rejected: Rejected) -> Self {
        ApiError::Refused(rejected)
    }
}

impl RetryHint for ApiError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Throttled(wait) => Some(*wait),
            ApiError::Down => None,
            ApiError::Refused(rejected) => rejected.retry_after(),
        }
    }
}

fn refusal(error: ApiError) -> Rejected {
    match error {
        ApiError::Refused(rejected) => rejected,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

mod breakers {
    use super::*;

    #[breaker(name = "hint-open", error_threshold = 1, error_timeout = "5s")]
    async fn call(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        answer.map_err(ApiError::Throttled)
    }

    #[tokio::test(start_paused = true)]
    async fn a_hinted_error_keeps_the_breaker_open_as_long_as_asked() {
        assert!(call(Err(secs(30))).await.is_err());
        let rejected = refusal(call(Ok(1)).await.unwrap_err());
        assert!(rejected.is_circuit_open());
        assert_eq!(rejected.retry_after(), Some(secs(30)));
        tokio::time::advance(secs(29)).await;
        assert!(call(Ok(1)).await.is_err(), "still open at 29 s");
        tokio::time::advance(secs(1)).await;
        assert_eq!(call(Ok(2)).await.unwrap(), 2, "the probe at 30 s closes it");
        let breaker = resiliency::breaker::get("hint-open").unwrap();
        assert_eq!(breaker.state(), State::Closed);
    }

    #[breaker(name = "hint-short", error_threshold = 1, error_timeout = "5s")]
    async fn short(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        answer.map_err(ApiError::Throttled)
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_hint_does_not_shorten_error_timeout() {
        assert!(short(Err(secs(1))).await.is_err());
        let rejected = refusal(short(Ok(1)).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(5)));
    }

    #[breaker(name = "hint-capped", error_threshold = 1, error_timeout = "5s")]
    async fn capped(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        answer.map_err(ApiError::Throttled)
    }

    #[tokio::test(start_paused = true)]
    async fn a_hint_is_capped_at_max_error_timeout() {
        // `max_error_timeout` is 10 x `error_timeout` by default: an hour becomes 50 s.
        assert!(capped(Err(secs(3600))).await.is_err());
        let rejected = refusal(capped(Ok(1)).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(50)));
    }

    #[breaker(name = "hint-count", error_threshold = 2, error_timeout = "5s")]
    async fn counted(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        answer.map_err(|wait| {
            if wait.is_zero() {
                ApiError::Down
            } else {
                ApiError::Throttled(wait)
            }
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_hint_alone_does_not_open_the_breaker_but_holds_it_when_the_rule_does() {
        assert!(counted(Err(secs(20))).await.is_err());
        assert_eq!(counted(Ok(1)).await.unwrap(), 1, "one error of two: closed");
        tokio::time::advance(secs(2)).await;
        // The second error opens it: the hint of 20 s asked 2 s ago still holds, 18 s left.
        assert!(counted(Err(Duration::ZERO)).await.is_err());
        let rejected = refusal(counted(Ok(1)).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(18)));
    }

    #[breaker(name = "hint-probe", error_threshold = 1, error_timeout = "5s")]
    async fn probe(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        answer.map_err(ApiError::Throttled)
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_failing_with_a_hint_reopens_for_it() {
        assert!(probe(Err(secs(1))).await.is_err());
        tokio::time::advance(secs(5)).await;
        assert!(probe(Err(secs(40))).await.is_err(), "the probe fails");
        let rejected = refusal(probe(Ok(1)).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(40)));
    }

    #[breaker(name = "hint-blocking", error_threshold = 1, error_timeout = "5s")]
    fn blocking(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        answer.map_err(ApiError::Throttled)
    }

    #[test]
    fn a_blocking_fn_reads_hints_too() {
        let rt = support::paused_runtime();
        let _enter = rt.enter();
        assert!(blocking(Err(secs(30))).is_err());
        let rejected = refusal(blocking(Ok(1)).unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(30)));
    }

    /// A generic error type without a `RetryHint` bound reads no hint, and compiles.
    #[breaker(name = "hint-generic", error_threshold = 1, error_timeout = "5s")]
    async fn generic<E: From<Rejected>>(error: Option<E>) -> Result<u32, E> {
        error.map_or(Ok(1), Err)
    }

    #[tokio::test(start_paused = true)]
    async fn a_generic_error_type_reads_none() {
        assert!(generic(Some(ApiError::Throttled(secs(60)))).await.is_err());
        let rejected = refusal(generic::<ApiError>(None).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(5)));
    }

    struct Panicky;

    impl From<Rejected> for Panicky {
        fn from(_: Rejected) -> Self {
            Panicky
        }
    }

    impl RetryHint for Panicky {
        fn retry_after(&self) -> Option<Duration> {
            panic!("the hint panicked")
        }
    }

    #[breaker(name = "hint-panics", error_threshold = 1, error_timeout = "5s")]
    async fn panicky(fail: bool) -> Result<u32, Panicky> {
        if fail {
            Err(Panicky)
        } else {
            Ok(1)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_hint_that_panics_counts_as_an_error_and_holds_nothing() {
        let caught = std::panic::AssertUnwindSafe(panicky(true))
            .catch_unwind()
            .await;
        assert!(caught.is_err(), "the panic goes to the caller");
        let breaker = resiliency::breaker::get("hint-panics").unwrap();
        assert_eq!(breaker.state(), State::Open, "counted as an error");
        tokio::time::advance(secs(5)).await;
        assert_eq!(panicky(false).await.ok(), Some(1));
        assert_eq!(breaker.state(), State::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn the_builder_reads_hints_with_call_hinted() {
        let breaker = resiliency::Breaker::builder("hint-builder")
            .error_threshold(1)
            .error_timeout(secs(5))
            .build()
            .unwrap();
        // `call` reads no hint.
        let _ = breaker
            .call(async { Err::<(), _>(ApiError::Throttled(secs(30))) })
            .await;
        let rejected = refusal(
            breaker
                .call(async { Ok::<(), ApiError>(()) })
                .await
                .unwrap_err(),
        );
        assert_eq!(rejected.retry_after(), Some(secs(5)));
        tokio::time::advance(secs(5)).await;
        // `call_hinted` does: the probe fails with 30 s asked.
        let _ = breaker
            .call_hinted(async { Err::<(), _>(ApiError::Throttled(secs(30))) })
            .await;
        let rejected = refusal(
            breaker
                .call_hinted(async { Ok::<(), ApiError>(()) })
                .await
                .unwrap_err(),
        );
        assert_eq!(rejected.retry_after(), Some(secs(30)));
    }
}

/// Hints against the grown open time of `backoff`, through the call that generated code makes,
/// and a hint that panics in a probe.
mod breaker_edges {
    use super::*;

    /// Failed probes grow the open time (`backoff`); a probe's hint keeps it open for the longer
    /// of the two, never their sum.
    #[tokio::test(start_paused = true)]
    async fn a_probe_hint_and_backoff_keep_it_open_for_the_longer() {
        let breaker = resiliency::Breaker::builder("hint-backoff")
            .error_threshold(1)
            .error_timeout(secs(5))
            .backoff(2.0)
            .build()
            .unwrap();
        let fail = |wait: Duration| {
            breaker.call_hinted(async move { Err::<(), _>(ApiError::Throttled(wait)) })
        };
        let refused = || async {
            refusal(
                breaker
                    .call_hinted(async { Ok::<(), ApiError>(()) })
                    .await
                    .unwrap_err(),
            )
            .retry_after()
        };
        assert!(fail(secs(1)).await.is_err());
        assert_eq!(refused().await, Some(secs(5)));
        tokio::time::advance(secs(5)).await;
        // The first failed probe: 10 s grown, 7 s asked.
        assert!(fail(secs(7)).await.is_err());
        assert_eq!(refused().await, Some(secs(10)));
        tokio::time::advance(secs(10)).await;
        // The second: 20 s grown, 30 s asked.
        assert!(fail(secs(30)).await.is_err());
        assert_eq!(refused().await, Some(secs(30)));
        assert_eq!(breaker.snapshot().open_for, secs(20));
    }

    static SITE: resiliency::__private::BreakerSite = resiliency::__private::BreakerSite::new(
        || "hint-site",
        |breaker| {
            breaker
                .error_threshold(1)
                .error_timeout(Duration::from_secs(5))
        },
    );

    /// What `#[breaker]` expands to, written out: `Site::call_with` with `every_error` and the
    /// hint reader of the fn's error type.
    async fn by_hand(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        SITE.breaker()
            .call_with(
                async move { answer.map_err(ApiError::Throttled) },
                resiliency::__private::every_error,
                resiliency::__private::hint_reader!(ApiError),
            )
            .await
    }

    fn by_hand_blocking(answer: Result<u32, Duration>) -> Result<u32, ApiError> {
        SITE.breaker().call_blocking_with(
            move || answer.map_err(ApiError::Throttled),
            resiliency::__private::every_error,
            resiliency::__private::hint_reader!(ApiError),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_generated_call_reads_the_hint() {
        assert!(by_hand(Err(secs(30))).await.is_err());
        let rejected = refusal(by_hand(Ok(1)).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(30)));
        let rejected = refusal(by_hand_blocking(Ok(1)).unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(30)));
        tokio::time::advance(secs(30)).await;
        assert!(by_hand_blocking(Err(secs(20))).is_err(), "the probe fails");
        let rejected = refusal(by_hand(Ok(1)).await.unwrap_err());
        assert_eq!(rejected.retry_after(), Some(secs(20)));
        tokio::time::advance(secs(20)).await;
        assert_eq!(by_hand(Ok(2)).await.unwrap(), 2);
    }

    #[derive(Debug)]
    struct PanicHint;

    impl From<Rejected> for PanicHint {
        fn from(_: Rejected) -> Self {
            PanicHint
        }
    }

    impl RetryHint for PanicHint {
        fn retry_after(&self) -> Option<Duration> {
            panic!("the hint panicked")
        }
    }

    /// A probe whose error's hint panics: the panic goes to the caller, the probe counts as
    /// failed (open again for `error_timeout`, nothing longer), and its slot comes back.
    #[tokio::test(start_paused = true)]
    async fn a_probe_whose_hint_panics_gives_its_slot_back() {
        let breaker = resiliency::Breaker::builder("hint-probe-panics")
            .error_threshold(1)
            .error_timeout(secs(5))
            .build()
            .unwrap();
        let _ = breaker.call(async { Err::<(), _>(PanicHint) }).await;
        tokio::time::advance(secs(5)).await;
        assert_eq!(breaker.state(), State::HalfOpen);
        let probe = breaker.call_hinted(async { Err::<(), _>(PanicHint) });
        let caught = std::panic::AssertUnwindSafe(probe).catch_unwind().await;
        assert!(caught.is_err(), "the panic goes to the caller");
        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, State::Open);
        assert_eq!(snapshot.half_opens_in, Some(secs(5)));
        tokio::time::advance(secs(5)).await;
        assert!(breaker
            .call(async { Ok::<(), PanicHint>(()) })
            .await
            .is_ok());
        assert_eq!(breaker.state(), State::Closed);
    }
}

/// Hints as long as a `Duration` goes (a `Retry-After` of too many digits reads as
/// `u64::MAX` seconds): capped where each policy caps them, never an overflow.
mod huge_hints {
    use super::*;

    const HUGE: [Duration; 3] = [
        Duration::MAX,
        Duration::from_secs(u64::MAX),
        Duration::from_nanos(u64::MAX),
    ];

    /// A breaker holds itself open for `max_error_timeout` at most, from a closed call and from
    /// a probe.
    #[tokio::test(start_paused = true)]
    async fn a_breaker_caps_them_at_max_error_timeout() {
        let breaker = resiliency::Breaker::builder("hint-huge")
            .error_threshold(1)
            .error_timeout(secs(5))
            .backoff(2.0)
            .max_error_timeout(secs(60))
            .build()
            .unwrap();
        let refused = || async {
            refusal(
                breaker
                    .call_hinted(async { Ok::<(), ApiError>(()) })
                    .await
                    .unwrap_err(),
            )
            .retry_after()
        };
        for hint in HUGE {
            let _ = breaker
                .call_hinted(async move { Err::<(), _>(ApiError::Throttled(hint)) })
                .await;
            assert_eq!(refused().await, Some(secs(60)), "{hint:?}");
            tokio::time::advance(secs(60)).await;
            // The probe fails with the same hint: open again for 60 s.
            let _ = breaker
                .call_hinted(async move { Err::<(), _>(ApiError::Throttled(hint)) })
                .await;
            assert_eq!(refused().await, Some(secs(60)), "{hint:?}");
            tokio::time::advance(secs(60)).await;
            assert!(breaker
                .call_hinted(async { Ok::<(), ApiError>(()) })
                .await
                .is_ok());
            assert_eq!(breaker.state(), State::Closed);
        }
    }

    /// With `max_error_timeout` itself as long as a `Duration` goes, the breaker stays open for
    /// centuries: still no overflow, in its refusals or its snapshot.
    #[tokio::test(start_paused = true)]
    async fn a_breaker_without_a_cap_stays_open_without_an_overflow() {
        let breaker = resiliency::Breaker::builder("hint-huge-uncapped")
            .error_threshold(1)
            .error_timeout(secs(5))
            .backoff(2.0)
            .max_error_timeout(Duration::MAX)
            .build()
            .unwrap();
        for hint in HUGE {
            let _ = breaker
                .call_hinted(async move { Err::<(), _>(ApiError::Throttled(hint)) })
                .await;
            let rejected = refusal(
                breaker
                    .call_hinted(async { Ok::<(), ApiError>(()) })
                    .await
                    .unwrap_err(),
            );
            let wait = rejected.retry_after().unwrap();
            assert!(wait > secs(100 * 365 * 86_400), "{hint:?}: {wait:?}");
            let snapshot = breaker.snapshot();
            assert_eq!(snapshot.state, State::Open);
            assert!(snapshot.half_opens_in.unwrap() > secs(100 * 365 * 86_400));
            tokio::time::advance(secs(365 * 86_400)).await;
            assert_eq!(breaker.state(), State::Open, "{hint:?}");
        }
    }

    /// A race's next attempt would wait past `total`: the call ends at once with that error.
    #[tokio::test(start_paused = true)]
    async fn a_race_ends_at_once_rather_than_wait_past_total() {
        let race = resiliency::race_retry::RaceRetry::builder("hint-huge-race")
            .retries(2)
            .after(ms(100))
            .total(secs(1))
            .backoff(resiliency::race_retry::Backoff::Off)
            .register()
            .unwrap();
        for hint in HUGE {
            let started = tokio::time::Instant::now();
            let error = race
                .run_hinted(|| async move { Err::<u32, _>(ApiError::Throttled(hint)) })
                .await
                .unwrap_err();
            assert!(matches!(error, ApiError::Throttled(wait) if wait == hint));
            assert_eq!(started.elapsed(), Duration::ZERO, "{hint:?}");
        }
    }

    /// With no deadline (`total` as long as a `Duration` goes), the next attempt waits for good
    /// and the attempt in flight still answers.
    #[tokio::test(start_paused = true)]
    async fn a_race_without_a_deadline_keeps_racing_the_attempt_in_flight() {
        let race = resiliency::race_retry::RaceRetry::builder("hint-huge-race-no-total")
            .retries(2)
            .after(ms(100))
            .total(Duration::MAX)
            .backoff(resiliency::race_retry::Backoff::Off)
            .register()
            .unwrap();
        for hint in HUGE {
            let calls = AtomicU32::new(0);
            let started = tokio::time::Instant::now();
            let (result, attempts) = observe(race.run_hinted(|| {
                let n = calls.fetch_add(1, SeqCst);
                async move {
                    if n == 0 {
                        tokio::time::sleep(ms(500)).await;
                        Ok(1)
                    } else {
                        Err(ApiError::Throttled(hint))
                    }
                }
            }))
            .await;
            assert_eq!(result.unwrap(), 1, "{hint:?}");
            assert_eq!(started.elapsed(), ms(500));
            assert_eq!(
                attempts.len(),
                2,
                "attempt 3 waits for the hint, never starts"
            );
        }
    }
}

mod races {
    use super::*;

    static THROTTLED: AtomicU32 = AtomicU32::new(0);

    /// The first attempt is throttled for 2 s, later ones answer.
    #[race_retry(retries = 2, after = "100ms", total = "5s", backoff = "off")]
    async fn throttled_once() -> Result<u32, ApiError> {
        match THROTTLED.fetch_add(1, SeqCst) {
            0 => Err(ApiError::Throttled(secs(2))),
            n => Ok(n),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_attempt_waits_as_long_as_asked() {
        let (result, attempts) = observe(throttled_once()).await;
        assert_eq!(result.unwrap(), 1);
        let retry = attempts.iter().find(|a| a.number == 2).unwrap();
        // Not at 100 ms (its staggered start), nor at once (no backoff): at 2 s.
        assert_eq!(retry.started, secs(2));
        assert_eq!(retry.outcome, Outcome::Won);
    }

    #[race_retry(retries = 2, after = "100ms", total = "1s", backoff = "off")]
    async fn asked_past_total() -> Result<u32, ApiError> {
        Err(ApiError::Throttled(secs(10)))
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_total_ends_the_call_at_once_with_that_error() {
        let started = tokio::time::Instant::now();
        let error = asked_past_total().await.unwrap_err();
        assert!(matches!(error, ApiError::Throttled(wait) if wait == secs(10)));
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    static RACING: AtomicU32 = AtomicU32::new(0);

    /// Attempt 1 answers at 500 ms; attempt 2 (at 100 ms) is throttled for 10 s.
    #[race_retry(retries = 2, after = "100ms", total = "5s", backoff = "off")]
    async fn racing() -> Result<u32, ApiError> {
        match RACING.fetch_add(1, SeqCst) {
            0 => {
                tokio::time::sleep(ms(500)).await;
                Ok(1)
            }
            _ => Err(ApiError::Throttled(secs(10))),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_in_flight_keeps_racing_during_the_wait() {
        let started = tokio::time::Instant::now();
        let (result, attempts) = observe(racing()).await;
        assert_eq!(result.unwrap(), 1);
        assert_eq!(started.elapsed(), ms(500));
        assert_eq!(
            attempts.len(),
            2,
            "attempt 3 waits for the 10 s, never starts"
        );
    }

    static BREAKER_CALLS: AtomicU32 = AtomicU32::new(0);

    /// A breaker around each attempt: it opens at the first error, and refuses the next attempt
    /// with the time until it half-opens, which the race waits for rather than failing at once.
    #[race_retry(retries = 2, after = "10s", total = "20s", backoff = "off")]
    #[breaker(name = "hint-inner", error_threshold = 1, error_timeout = "3s")]
    async fn through_a_breaker() -> Result<u32, ApiError> {
        match BREAKER_CALLS.fetch_add(1, SeqCst) {
            0 => Err(ApiError::Down),
            n => Ok(n),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_breakers_refusal_delays_the_retry_until_it_half_opens() {
        let (result, attempts) = observe(through_a_breaker()).await;
        // Attempt 1 fails and opens the breaker; attempt 2, at once, is refused with 3 s left;
        // attempt 3 starts at 3 s, the breaker's probe, and answers.
        assert_eq!(result.unwrap(), 1);
        let third = attempts.iter().find(|a| a.number == 3).unwrap();
        assert_eq!(third.started, secs(3));
        assert_eq!(third.outcome, Outcome::Won);
    }

    struct Panicky;

    impl From<Rejected> for Panicky {
        fn from(_: Rejected) -> Self {
            Panicky
        }
    }

    impl RetryHint for Panicky {
        fn retry_after(&self) -> Option<Duration> {
            panic!("the hint panicked")
        }
    }

    #[race_retry(name = "hint-race-panics", retries = 1, after = "100ms", total = "1s")]
    async fn panicky() -> Result<u32, Panicky> {
        Err(Panicky)
    }

    #[tokio::test(start_paused = true)]
    async fn a_hint_that_panics_ends_the_call_with_the_panic() {
        let caught = std::panic::AssertUnwindSafe(panicky()).catch_unwind().await;
        assert!(caught.is_err());
        // The next call runs as usual (and panics the same way).
        let caught = std::panic::AssertUnwindSafe(panicky()).catch_unwind().await;
        assert!(caught.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_builder_reads_hints_with_run_hinted() {
        let race = resiliency::race_retry::RaceRetry::builder("hint-builder-race")
            .retries(1)
            .after(ms(100))
            .total(secs(5))
            .backoff(resiliency::race_retry::Backoff::Off)
            .register()
            .unwrap();
        let calls = AtomicU32::new(0);
        let (result, attempts) = observe(race.run_hinted(|| async {
            match calls.fetch_add(1, SeqCst) {
                0 => Err(ApiError::Throttled(secs(1))),
                n => Ok(n),
            }
        }))
        .await;
        assert_eq!(result.unwrap(), 1);
        let retry = attempts.iter().find(|a| a.number == 2).unwrap();
        assert_eq!(retry.started, secs(1));
    }
}

mod fallbacks {
    use super::*;

    fn later(_n: u32, why: Rejected) -> Result<u32, ApiError> {
        Ok(why.retry_after().map_or(0, |wait| wait.as_secs() as u32))
    }

    /// With a fallback for refusals, the body's error still carries its hint to the breaker.
    #[breaker(name = "hint-fallback", error_threshold = 1, error_timeout = "5s", fallback = later)]
    async fn with_fallback(n: u32) -> Result<u32, ApiError> {
        if n == 0 {
            return Err(ApiError::Throttled(secs(25)));
        }
        Ok(n)
    }

    #[tokio::test(start_paused = true)]
    async fn the_fallback_sees_the_hinted_open_time() {
        assert!(with_fallback(0).await.is_err());
        assert_eq!(with_fallback(1).await.unwrap(), 25);
    }
}

#[cfg(feature = "tower")]
mod tower_layer {
    use super::*;
    use http::{Response, StatusCode};
    use resiliency::tower::BreakerLayer;
    use tower::{Layer, ServiceExt};

    #[tokio::test(start_paused = true)]
    async fn a_503_with_retry_after_holds_the_breaker_open() {
        let layer = BreakerLayer::new(
            resiliency::Breaker::builder("hint-tower")
                .error_threshold(1)
                .error_timeout(secs(5)),
        )
        .unwrap()
        .http_server_errors();
        let service = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(
                Response::builder()
                    .status(StatusCode::SERVICE_UNAVAILABLE)
                    .header(http::header::RETRY_AFTER, "45")
                    .body(())
                    .unwrap(),
            )
        }));
        let response = service.clone().oneshot(()).await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let refused = service.oneshot(()).await.unwrap_err();
        let rejected = refused.downcast_ref::<Rejected>().unwrap();
        assert_eq!(rejected.retry_after(), Some(secs(45)));
    }
}

mod boxed_errors {
    use super::*;
    use support::BoxError;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    /// A boxed error carries the refusal of the breaker inside it: the race waits for the
    /// breaker to half-open, with no `RetryHint` impl of the user's.
    #[race_retry(retries = 2, after = "10s", total = "20s", backoff = "off")]
    #[breaker(name = "hint-boxed", error_threshold = 1, error_timeout = "4s")]
    async fn boxed() -> Result<u32, BoxError> {
        match CALLS.fetch_add(1, SeqCst) {
            0 => Err("down".into()),
            n => Ok(n),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_boxed_refusal_delays_the_retry() {
        let (result, attempts) = observe(boxed()).await;
        assert_eq!(result.unwrap(), 1);
        let third = attempts.iter().find(|a| a.number == 3).unwrap();
        assert_eq!(third.started, secs(4));
    }

    #[cfg(feature = "anyhow")]
    static ANYHOW_CALLS: AtomicU32 = AtomicU32::new(0);

    #[cfg(feature = "anyhow")]
    #[race_retry(retries = 2, after = "10s", total = "20s", backoff = "off")]
    #[breaker(name = "hint-anyhow", error_threshold = 1, error_timeout = "2s")]
    async fn with_anyhow() -> anyhow::Result<u32> {
        match ANYHOW_CALLS.fetch_add(1, SeqCst) {
            0 => anyhow::bail!("down"),
            n => Ok(n),
        }
    }

    #[cfg(feature = "anyhow")]
    #[tokio::test(start_paused = true)]
    async fn an_anyhow_refusal_delays_the_retry() {
        let (result, attempts) = observe(with_anyhow()).await;
        assert_eq!(result.unwrap(), 1);
        let third = attempts.iter().find(|a| a.number == 3).unwrap();
        assert_eq!(third.started, secs(2));
    }
}
