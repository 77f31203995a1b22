//! `#[race_retry]` end to end, through the facade, on tokio's paused clock: staggered starts, a
//! retry that races the attempt in flight instead of aborting it, the `total` deadline, `each`,
//! fast failures, cancellation of losers, the last error, `retry_if`, the retry budget, the learned
//! percentile, the argument shapes an attempt can copy, `Send`, stacking with `#[breaker]`,
//! `race_retry::observe`, and calls outside tokio.
//!
//! Each raced fn has its own static policy (budget, latencies, counters), so every test that reads
//! stats, spends budget or learns a percentile has a fn of its own. Most bodies are
//! `probe.attempt().await`: a [`Probe`] plays a script (attempt k answers, fails or hangs after so
//! many ms) and records when each attempt started and when one was dropped before it finished.
//!
//! On the paused clock a timer fires on tokio's millisecond tick: a deadline that is not a whole
//! number of milliseconds (a learned percentile) is seen up to 1 ms late.

use std::fmt::Display;
use std::future::pending;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::race_retry::{observe, Attempt, Outcome, RaceRetryStats};
use resiliency::{race_retry, Rejected};
use tokio::time::{sleep, Instant};

use crate::support;
use support::{block_on_without_tokio, ms, BoxError, RaceError as Error, YieldOnce};

/// `retry_if` as a path: every error but `Fatal` is worth another attempt.
fn is_transient(error: &Error) -> bool {
    !matches!(error, Error::Fatal(_))
}

/// What attempt k of a call does.
#[derive(Copy, Clone, Debug)]
enum Step {
    /// Answers `Ok(k)` after this many ms.
    Answer(u64),
    /// Fails with `Error::Attempt(k)` after this many ms.
    Fail(u64),
    /// Fails with `Error::Fatal(k)` after this many ms.
    Fatal(u64),
    /// Never ends.
    Hang,
}

use Step::{Answer, Fail, Hang};

/// One call's script, and what its attempts did.
struct Probe {
    /// The call's start.
    t0: Instant,
    script: Vec<Step>,
    launched: AtomicU32,
    live: AtomicU32,
    /// The most attempt futures alive at once.
    peak: AtomicU32,
    finished: AtomicU32,
    starts: Mutex<Vec<Duration>>,
    /// Attempts dropped before they ended: (number, when).
    cancelled: Mutex<Vec<(u32, Duration)>>,
}

impl Probe {
    /// Attempts beyond the script hang.
    fn new(script: &[Step]) -> Probe {
        Probe {
            t0: Instant::now(),
            script: script.to_vec(),
            launched: AtomicU32::new(0),
            live: AtomicU32::new(0),
            peak: AtomicU32::new(0),
            finished: AtomicU32::new(0),
            starts: Mutex::new(Vec::new()),
            cancelled: Mutex::new(Vec::new()),
        }
    }

    /// One attempt: plays the script's step for its number.
    async fn attempt(&self) -> Result<u32, Error> {
        let n = self.launched.fetch_add(1, SeqCst) + 1;
        self.starts.lock().unwrap().push(self.t0.elapsed());
        let guard = Alive::new(self, n);
        let step = self.script.get(n as usize - 1).copied().unwrap_or(Hang);
        let output = match step {
            Answer(after) => {
                sleep(ms(after)).await;
                Ok(n)
            }
            Fail(after) => {
                sleep(ms(after)).await;
                Err(Error::Attempt(n))
            }
            Step::Fatal(after) => {
                sleep(ms(after)).await;
                Err(Error::Fatal(n))
            }
            Hang => pending().await,
        };
        guard.finish();
        output
    }

    /// Time since the call started.
    fn elapsed(&self) -> Duration {
        self.t0.elapsed()
    }

    /// When each attempt started, after the call started, in the order they started.
    fn starts(&self) -> Vec<Duration> {
        self.starts.lock().unwrap().clone()
    }

    /// The attempts dropped before they ended, by number.
    fn cancelled(&self) -> Vec<(u32, Duration)> {
        let mut cancelled = self.cancelled.lock().unwrap().clone();
        cancelled.sort();
        cancelled
    }

    /// Attempt futures alive now.
    fn live(&self) -> u32 {
        self.live.load(SeqCst)
    }

    /// The most attempt futures alive at once.
    fn peak(&self) -> u32 {
        self.peak.load(SeqCst)
    }

    /// Attempts that ran to their end.
    fn finished(&self) -> u32 {
        self.finished.load(SeqCst)
    }
}

/// Alive while an attempt's future is: records the attempt if it is dropped before its end.
struct Alive<'a> {
    probe: &'a Probe,
    number: u32,
    done: bool,
}

impl<'a> Alive<'a> {
    fn new(probe: &'a Probe, number: u32) -> Self {
        let live = probe.live.fetch_add(1, SeqCst) + 1;
        probe.peak.fetch_max(live, SeqCst);
        Alive {
            probe,
            number,
            done: false,
        }
    }

    fn finish(mut self) {
        self.done = true;
        self.probe.finished.fetch_add(1, SeqCst);
    }
}

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.probe.live.fetch_sub(1, SeqCst);
        if !self.done {
            let at = self.probe.t0.elapsed();
            self.probe.cancelled.lock().unwrap().push((self.number, at));
        }
    }
}

/// The full name of a raced fn of this file.
fn name(function: &str) -> String {
    format!("{}::{function}", module_path!())
}

/// The stats of a raced fn of this file (after its first call).
fn stats(function: &str) -> RaceRetryStats {
    race_retry::stats(&name(function)).unwrap_or_else(|| {
        panic!(
            "no stats for {function}; raced fns: {:?}",
            race_retry::names()
        )
    })
}

/// An attempt as `observe` reports it, for a raced fn of this file.
fn attempt(
    function: &'static str,
    number: u32,
    started: u64,
    elapsed: u64,
    outcome: Outcome,
) -> Attempt {
    Attempt {
        name: race_retry::names()
            .into_iter()
            .find(|n| *n == name(function))
            .unwrap_or_else(|| panic!("{function} not in {:?}", race_retry::names())),
        number,
        started: ms(started),
        elapsed: ms(elapsed),
        outcome,
    }
}

// ---------------------------------------------------------------------------------------------
// When attempts start and end

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn staggered(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// While no attempt has answered, attempt k + 1 starts `after` (150 ms) after attempt k: at 0, 150
/// and 300 ms. The third answers at 400 ms and wins; the others are cancelled then; the stats
/// count two extra attempts and one win by an extra, under the fn's path.
#[tokio::test(start_paused = true)]
async fn attempts_start_staggered_by_after() {
    let probe = Probe::new(&[Hang, Hang, Answer(100)]);
    assert_eq!(staggered(&probe).await.unwrap(), 3);
    assert_eq!(probe.elapsed(), ms(400));
    assert_eq!(probe.starts(), [ms(0), ms(150), ms(300)]);
    assert_eq!(probe.cancelled(), [(1, ms(400)), (2, ms(400))]);
    assert_eq!(probe.live(), 0);

    assert!(
        race_retry::names().contains(&"suite::race_retry::staggered"),
        "{:?}",
        race_retry::names()
    );
    let stats = stats("staggered");
    assert_eq!(stats.extra_attempts, 2);
    assert_eq!(stats.won_by_extra, 1);
    assert_eq!(stats.deadlines, 0);
    assert_eq!(stats.budget_refused, 0);
    assert_eq!(stats.after, ms(150));
}

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn no_abort(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// A retry races the attempt in flight instead of aborting it: attempt 1 answers at 400 ms, after
/// attempts 2 and 3 started (150 and 300 ms), and its answer is the call's, at 400 ms.
#[tokio::test(start_paused = true)]
async fn a_retry_does_not_abort_the_attempt_in_flight() {
    let probe = Probe::new(&[Answer(400), Hang, Hang]);
    assert_eq!(no_abort(&probe).await.unwrap(), 1);
    assert_eq!(probe.elapsed(), ms(400));
    assert_eq!(probe.starts(), [ms(0), ms(150), ms(300)]);
    assert_eq!(probe.cancelled(), [(2, ms(400)), (3, ms(400))]);
    let stats = stats("no_abort");
    assert_eq!((stats.extra_attempts, stats.won_by_extra), (2, 0));
}

#[race_retry(retries = 2, after = "450ms", total = "1350ms")]
async fn perron(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// Perron's case: a server that always takes 500 ms, `after` 450 ms, `total` 1350 ms. A client
/// that aborted at 450 ms to retry would never get an answer; the race returns attempt 1's at
/// 500 ms, with attempt 2 (started at 450 ms) cancelled.
#[tokio::test(start_paused = true)]
async fn perron_a_500ms_server_answers_at_500ms() {
    let probe = Probe::new(&[Answer(500), Answer(500), Answer(500)]);
    assert_eq!(perron(&probe).await.unwrap(), 1);
    assert_eq!(probe.elapsed(), ms(500));
    assert_eq!(probe.starts(), [ms(0), ms(450)]);
    assert_eq!(probe.cancelled(), [(2, ms(500))]);
}

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn hangs(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// When every attempt hangs, the call ends at `total` (exactly 450 ms) with a `Rejected` that
/// `is_deadline`, names the fn and counts 3 attempts; every attempt future has been dropped then,
/// each reported `Abandoned` with the time it ran; the stats count one deadline.
#[tokio::test(start_paused = true)]
async fn the_total_deadline_ends_the_call_and_drops_every_attempt() {
    let probe = Probe::new(&[Hang, Hang, Hang]);
    let (result, attempts) = observe(hangs(&probe)).await;
    assert_eq!(probe.elapsed(), ms(450));
    let error = result.unwrap_err();
    let rejected = error.rejected();
    assert!(rejected.is_deadline(), "{rejected}");
    assert!(!rejected.is_timeout(), "{rejected}");
    assert_eq!(rejected.name(), "suite::race_retry::hangs");
    let message = rejected.to_string();
    assert!(
        message.contains("suite::race_retry::hangs") && message.contains("3 attempts"),
        "{message}"
    );
    assert_eq!(probe.starts(), [ms(0), ms(150), ms(300)]);
    assert_eq!(
        probe.cancelled(),
        [(1, ms(450)), (2, ms(450)), (3, ms(450))]
    );
    assert_eq!(probe.live(), 0);
    assert_eq!(
        attempts,
        [
            attempt("hangs", 1, 0, 450, Outcome::Abandoned),
            attempt("hangs", 2, 150, 300, Outcome::Abandoned),
            attempt("hangs", 3, 300, 150, Outcome::Abandoned),
        ]
    );
    assert_eq!(stats("hangs").deadlines, 1);
}

#[race_retry(retries = 1, after = "100ms", total = "250ms")]
async fn boxed(probe: &Probe) -> Result<u32, BoxError> {
    probe.attempt().await.map_err(|e| format!("{e:?}").into())
}

/// `Box<dyn Error + Send + Sync>` needs no code from the user: the deadline is a boxed
/// `Rejected`, and an attempt's own error comes back as it was.
#[tokio::test(start_paused = true)]
async fn a_boxed_error_carries_the_deadline() {
    let probe = Probe::new(&[Hang, Hang]);
    let error = boxed(&probe).await.unwrap_err();
    assert_eq!(probe.elapsed(), ms(250));
    assert!(error.downcast_ref::<Rejected>().unwrap().is_deadline());

    let probe = Probe::new(&[Fail(5), Fail(5)]);
    let error = boxed(&probe).await.unwrap_err();
    assert_eq!(error.to_string(), "Attempt(2)");
}

#[race_retry(total = "300ms")]
async fn defaults(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// With `total` alone: 2 retries (3 attempts), and `after = "p95"` which, before 32 latencies were
/// seen, is `total / (retries + 1)` = 100 ms: attempts at 0, 100, 200 ms, deadline at 300 ms.
#[tokio::test(start_paused = true)]
async fn total_alone_means_two_retries_and_total_over_three_before_learning() {
    let probe = Probe::new(&[Hang, Hang, Hang, Answer(0)]);
    let error = defaults(&probe).await.unwrap_err();
    assert!(error.rejected().is_deadline());
    assert_eq!(probe.elapsed(), ms(300));
    assert_eq!(probe.starts(), [ms(0), ms(100), ms(200)]);
    assert_eq!(stats("defaults").after, ms(100));
}

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "1s",
    each = "100ms",
    backoff = "off"
)]
async fn bounded(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "1s",
    each = "100ms",
    backoff = "off"
)]
async fn bounded_then_answered(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// An attempt past `each` (100 ms) is cancelled, counts as failed, and the next starts at once
/// with `backoff = "off"` (100 ms, not 150 ms; by default after a backoff, as for any failure:
/// see `a_timed_out_attempt_is_replaced_after_its_backoff`). When the last one times out, the call ends with a `Rejected` that
/// `is_timeout` (not `is_deadline`), long before `total`.
#[tokio::test(start_paused = true)]
async fn an_attempt_past_each_fails_and_with_backoff_off_the_next_starts_at_once() {
    let probe = Probe::new(&[Hang, Hang, Hang]);
    let (result, attempts) = observe(bounded(&probe)).await;
    let error = result.unwrap_err();
    assert!(error.rejected().is_timeout(), "{}", error.rejected());
    assert!(!error.rejected().is_deadline());
    assert_eq!(probe.elapsed(), ms(300));
    assert_eq!(probe.starts(), [ms(0), ms(100), ms(200)]);
    assert_eq!(
        probe.cancelled(),
        [(1, ms(100)), (2, ms(200)), (3, ms(300))]
    );
    assert_eq!(
        attempts,
        [
            attempt("bounded", 1, 0, 100, Outcome::TimedOut),
            attempt("bounded", 2, 100, 100, Outcome::TimedOut),
            attempt("bounded", 3, 200, 100, Outcome::TimedOut),
        ]
    );
    assert_eq!(stats("bounded").deadlines, 0);

    // The attempt started at 100 ms answers at 150 ms.
    let probe = Probe::new(&[Hang, Answer(50)]);
    assert_eq!(bounded_then_answered(&probe).await.unwrap(), 2);
    assert_eq!(probe.elapsed(), ms(150));
    assert_eq!(probe.starts(), [ms(0), ms(100)]);
    assert_eq!(probe.cancelled(), [(1, ms(100))]);
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off")]
async fn fast_failure(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// With `backoff = "off"`, an attempt that fails starts the next at once: attempt 1 fails at
/// 10 ms, attempt 2 starts at 10 ms (not 150), and attempt 3 `after` that, at 160 ms; it answers
/// at 165 ms.
#[tokio::test(start_paused = true)]
async fn with_backoff_off_a_failed_attempt_starts_the_next_at_once() {
    let probe = Probe::new(&[Fail(10), Hang, Answer(5)]);
    let (result, attempts) = observe(fast_failure(&probe)).await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(probe.elapsed(), ms(165));
    assert_eq!(probe.starts(), [ms(0), ms(10), ms(160)]);
    assert_eq!(probe.cancelled(), [(2, ms(165))]);
    assert_eq!(
        attempts,
        [
            attempt("fast_failure", 1, 0, 10, Outcome::Failed),
            attempt("fast_failure", 3, 160, 5, Outcome::Won),
            attempt("fast_failure", 2, 10, 155, Outcome::Lost),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Backoff after a failure

/// Runs `calls` calls of `call` (each with a fresh probe playing `script`) and returns, per call,
/// what `observe` saw of its attempts: (number, started, ended) in the order they started.
async fn timelines<F, Fut>(
    calls: usize,
    script: &[Step],
    call: F,
) -> Vec<Vec<(u32, Duration, Duration)>>
where
    F: Fn(Probe) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut out = Vec::new();
    for _ in 0..calls {
        let ((), attempts) = observe(call(Probe::new(script))).await;
        let mut seen: Vec<_> = attempts
            .iter()
            .map(|a| (a.number, a.started, a.started + a.elapsed))
            .collect();
        seen.sort();
        out.push(seen);
    }
    out
}

/// The waits between each attempt's failure and its replacement's start, per call.
fn waits(timelines: &[Vec<(u32, Duration, Duration)>]) -> Vec<Vec<Duration>> {
    timelines
        .iter()
        .map(|attempts| {
            attempts
                .windows(2)
                .map(|pair| pair[1].1 - pair[0].2)
                .collect()
        })
        .collect()
}

/// The `n`-th wait (0 for the first) of every call.
fn nth(waits: &[Vec<Duration>], n: usize) -> Vec<Duration> {
    waits.iter().map(|w| w[n]).collect()
}

fn mean(waits: &[Duration]) -> Duration {
    waits.iter().sum::<Duration>() / waits.len() as u32
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", budget = "off")]
async fn backs_off(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// By default an attempt that fails is replaced after a backoff with full jitter: a wait uniform
/// in [0, base), then [0, 2 x base), with `base` a quarter of `after` (37.5 ms here), so that
/// failures are not retried all at once. Attempt 1 fails at 10 ms; over 400 calls attempt 2
/// starts between 10 and 47.5 ms (spread over that range: on average half of it), and when it
/// fails too, attempt 3 waits up to 75 ms more. (The paused clock fires timers on whole
/// milliseconds: a wait is seen rounded up, up to 1 ms longer.)
#[tokio::test(start_paused = true)]
async fn a_failed_attempt_starts_the_next_after_a_backoff_with_full_jitter() {
    let base = Duration::from_micros(37_500);
    let runs = timelines(400, &[Fail(10), Fail(10), Answer(5)], |probe| async move {
        assert_eq!(backs_off(&probe).await.unwrap(), 3);
    })
    .await;
    let waits = waits(&runs);
    for (n, bound) in [(0, base), (1, 2 * base)] {
        let nth = nth(&waits, n);
        let (min, max) = (*nth.iter().min().unwrap(), *nth.iter().max().unwrap());
        assert!(max <= bound + ms(1), "wait {n}: {max:?} above {bound:?}");
        assert!(
            min < bound / 10 && max > bound * 9 / 10,
            "wait {n}: {min:?}..{max:?}"
        );
        let mean = mean(&nth);
        assert!(
            mean > bound * 4 / 10 && mean < bound * 6 / 10,
            "wait {n}: mean {mean:?} of [0, {bound:?})"
        );
    }
    assert!(runs.iter().all(|r| r[0] == (1, ms(0), ms(10))));
}

/// A policy's builder with its required settings.
fn built(
    name: &'static str,
    retries: u32,
    after: race_retry::After,
    total: Duration,
) -> race_retry::RaceRetryBuilder {
    race_retry::RaceRetry::builder(name)
        .retries(retries)
        .after(after)
        .total(total)
}

static DEFAULT_BACKOFF: LazyLock<race_retry::RaceRetry> = LazyLock::new(|| {
    built(
        "race_retry::default_backoff",
        2,
        race_retry::After::Fixed(Duration::from_millis(150)),
        Duration::from_millis(450),
    )
    .build()
    .unwrap()
});
// `after` at or above `total` is past the builder's rules; `__private::race_retry_unchecked`
// builds it, as a learned `after` can reach `total`.
static SEQUENTIAL: LazyLock<race_retry::RaceRetry> = LazyLock::new(|| {
    resiliency::__private::race_retry_unchecked(
        race_retry::RaceRetry::builder("race_retry::sequential")
            .retries(2)
            .after(race_retry::After::Fixed(Duration::MAX))
            .total(Duration::from_millis(400)),
    )
});

/// `RaceRetry::backoff_bound` says the default: a quarter of `after` (150 ms), doubling; with no
/// staggered start before the deadline (`after` of `Duration::MAX`), a quarter of `total`.
#[test]
fn the_default_backoff_is_a_quarter_of_after_or_total_doubling() {
    let bounds = [0, 1, 2].map(|n| DEFAULT_BACKOFF.backoff_bound(n));
    let base = Duration::from_micros(37_500);
    assert_eq!(bounds, [base, 2 * base, 4 * base]);
    assert_eq!(SEQUENTIAL.backoff_bound(0), ms(100));
    assert_eq!(DEFAULT_BACKOFF.budget(), Some(0.1));
}

#[race_retry(
    retries = 3,
    after = "1s",
    total = "5s",
    budget = "off",
    backoff = "10ms",
    backoff_factor = 3,
    backoff_max = "60ms"
)]
async fn grows(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// `backoff`, `backoff_factor` and `backoff_max`: the n-th wait is uniform in
/// [0, min(60 ms, 10 ms x 3^n)): at most 10, 30 and 60 ms (not 90; the paused clock rounds a wait
/// up to a whole millisecond), each bound nearly reached.
#[tokio::test(start_paused = true)]
async fn backoff_factor_and_max_shape_the_waits() {
    let runs = timelines(
        300,
        &[Fail(0), Fail(0), Fail(0), Fail(0)],
        |probe| async move {
            assert_eq!(grows(&probe).await.unwrap_err().failed_attempt(), 4);
        },
    )
    .await;
    let waits = waits(&runs);
    for (n, bound) in [(0, ms(10)), (1, ms(30)), (2, ms(60))] {
        let nth = nth(&waits, n);
        let max = *nth.iter().max().unwrap();
        assert!(
            max <= bound && max > bound * 8 / 10,
            "wait {n}: max {max:?}, bound {bound:?}"
        );
    }
}

#[race_retry(
    retries = 2,
    after = "100ms",
    total = "450ms",
    budget = "off",
    backoff = "1s"
)]
async fn long_backoff(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// A backoff never delays the next attempt past its staggered start: with `backoff = "1s"` and
/// `after = "100ms"`, attempt 1 fails at 10 ms and attempt 2 starts at 100 ms at the latest (at
/// 100 ms exactly unless the wait drawn is under 90 ms: 9% of calls).
#[tokio::test(start_paused = true)]
async fn a_backoff_never_waits_past_the_next_staggered_start() {
    let runs = timelines(100, &[Fail(10), Answer(5)], |probe| async move {
        assert_eq!(long_backoff(&probe).await.unwrap(), 2);
    })
    .await;
    let second: Vec<Duration> = runs.iter().map(|r| r[1].1).collect();
    assert!(
        second.iter().all(|s| *s >= ms(10) && *s <= ms(100)),
        "{second:?}"
    );
    let at_stagger = second.iter().filter(|s| **s == ms(100)).count();
    assert!(
        at_stagger >= 70,
        "{at_stagger} of 100 at the staggered start"
    );
}

static NEVER_BEFORE_THE_DEADLINE: LazyLock<race_retry::RaceRetry> = LazyLock::new(|| {
    resiliency::__private::race_retry_unchecked(
        race_retry::RaceRetry::builder("race_retry::never_before_the_deadline")
            .retries(2)
            .after(race_retry::After::Fixed(Duration::MAX))
            .total(Duration::from_millis(450))
            .backoff(Duration::MAX),
    )
});

/// A backoff that ends at or past the deadline starts nothing: when no other attempt runs, the
/// call returns the last error then and there, not the deadline's `Rejected` at 450 ms. (No
/// staggered start here, `after` being `Duration::MAX`; the wait is drawn in [0, Duration::MAX).)
#[tokio::test(start_paused = true)]
async fn a_backoff_past_the_deadline_ends_the_call_with_the_last_error_at_once() {
    let probe = Probe::new(&[Fail(10), Answer(0)]);
    let error: Error = NEVER_BEFORE_THE_DEADLINE
        .run(|| probe.attempt())
        .await
        .unwrap_err();
    assert_eq!(error.failed_attempt(), 1);
    assert_eq!(probe.elapsed(), ms(10));
    assert_eq!(probe.starts(), [ms(0)]);
}

#[race_retry(
    retries = 1,
    after = "150ms",
    total = "1s",
    each = "100ms",
    budget = "off",
    backoff = "20ms"
)]
async fn bounded_backs_off(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// An attempt cut by `each` is a failure like any other: its replacement waits its backoff.
/// Attempt 1 is cut at 100 ms; attempt 2 starts in [100, 120] ms (the paused clock rounds up to a
/// whole millisecond).
#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_replaced_after_its_backoff() {
    let mut starts = Vec::new();
    for _ in 0..100 {
        let probe = Probe::new(&[Hang, Answer(5)]);
        assert_eq!(bounded_backs_off(&probe).await.unwrap(), 2);
        starts.push(probe.starts()[1]);
    }
    assert!(
        starts.iter().all(|s| *s >= ms(100) && *s <= ms(120)),
        "{starts:?}"
    );
    assert!(starts.iter().any(|s| *s != ms(100)), "{starts:?}");
}

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn losers(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// Losers are dropped when the call returns, not left running: after attempt 2 wins at 170 ms no
/// attempt future is alive, and 10 s later none has run on or started. Dropping the call itself
/// (a caller's timeout at 200 ms) drops its attempts too.
#[tokio::test(start_paused = true)]
async fn losers_are_cancelled_when_the_call_returns() {
    let probe = Probe::new(&[Answer(1_000), Answer(20), Answer(0)]);
    assert_eq!(losers(&probe).await.unwrap(), 2);
    assert_eq!(probe.elapsed(), ms(170));
    assert_eq!(probe.live(), 0);
    assert_eq!(probe.cancelled(), [(1, ms(170))]);
    sleep(Duration::from_secs(10)).await;
    assert_eq!(probe.finished(), 1, "only the winner ran to its end");
    assert_eq!(probe.starts().len(), 2, "no attempt started after the call");

    // Dropped by its caller (here an outer timeout): the attempts go with it, reported as
    // abandoned.
    let probe = Probe::new(&[Hang, Hang, Hang]);
    let (timed_out, attempts) =
        resiliency::race_retry::observe(tokio::time::timeout(ms(200), losers(&probe))).await;
    assert!(timed_out.is_err());
    assert_eq!(probe.live(), 0);
    assert_eq!(probe.cancelled(), [(1, ms(200)), (2, ms(200))]);
    let reported: Vec<_> = attempts
        .iter()
        .map(|a| (a.number, a.started, a.elapsed, a.outcome))
        .collect();
    assert_eq!(
        reported,
        [
            (
                1,
                ms(0),
                ms(200),
                resiliency::race_retry::Outcome::Abandoned
            ),
            (
                2,
                ms(150),
                ms(50),
                resiliency::race_retry::Outcome::Abandoned
            )
        ]
    );
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off")]
async fn all_fail(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// When every attempt fails, the call returns the last error to arrive, whichever attempt made
/// it (`backoff = "off"`, for exact times): attempt 1 fails last (at 300 ms, after 2 and 3 failed at 160 and 170 ms), so its error is
/// the call's; with errors in order, attempt 3's.
#[tokio::test(start_paused = true)]
async fn when_all_fail_the_last_error_is_returned() {
    let probe = Probe::new(&[Fail(300), Fail(10), Fail(10)]);
    let (result, attempts) = observe(all_fail(&probe)).await;
    assert_eq!(result.unwrap_err().failed_attempt(), 1);
    assert_eq!(probe.elapsed(), ms(300));
    assert_eq!(probe.starts(), [ms(0), ms(150), ms(160)]);
    assert_eq!(
        attempts,
        [
            attempt("all_fail", 2, 150, 10, Outcome::Failed),
            attempt("all_fail", 3, 160, 10, Outcome::Failed),
            attempt("all_fail", 1, 0, 300, Outcome::Failed),
        ]
    );

    let probe = Probe::new(&[Fail(10), Fail(10), Fail(10)]);
    assert_eq!(all_fail(&probe).await.unwrap_err().failed_attempt(), 3);
    assert_eq!(probe.elapsed(), ms(30));
    assert_eq!(probe.starts(), [ms(0), ms(10), ms(20)]);
    assert_eq!(stats("all_fail").deadlines, 0);
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", retry_if = is_transient)]
async fn picky(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off", retry_if = |e| !matches!(e, Error::Fatal(_)))]
async fn picky_closure(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// An error `retry_if` rejects ends the call at once with that error: attempt 2's fatal error at
/// 170 ms is returned then, attempt 1 is cancelled (`Abandoned`) and attempt 3 never starts. With
/// a closure (and `backoff = "off"`), an error it accepts still starts the next attempt at once.
#[tokio::test(start_paused = true)]
async fn a_non_retryable_error_ends_the_call_at_once() {
    let probe = Probe::new(&[Hang, Step::Fatal(20), Answer(0)]);
    let (result, attempts) = observe(picky(&probe)).await;
    assert!(matches!(result, Err(Error::Fatal(2))), "{result:?}");
    assert_eq!(probe.elapsed(), ms(170));
    assert_eq!(probe.cancelled(), [(1, ms(170))]);
    assert_eq!(probe.live(), 0);
    assert_eq!(
        attempts,
        [
            attempt("picky", 2, 150, 20, Outcome::NotRetryable),
            attempt("picky", 1, 0, 170, Outcome::Abandoned),
        ]
    );
    sleep(Duration::from_secs(1)).await;
    assert_eq!(probe.starts(), [ms(0), ms(150)], "attempt 3 never starts");

    let probe = Probe::new(&[Fail(10), Step::Fatal(10), Answer(0)]);
    let result = picky_closure(&probe).await;
    assert!(matches!(result, Err(Error::Fatal(2))), "{result:?}");
    assert_eq!(probe.elapsed(), ms(20));
    assert_eq!(probe.starts(), [ms(0), ms(10)]);
}

// ---------------------------------------------------------------------------------------------
// At most n attempts at once (`max_attempts_in_flight`)

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "2s",
    backoff = "off",
    max_attempts_in_flight = 1
)]
async fn one_at_a_time(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// With `max_attempts_in_flight = 1` a race is a plain retry under `total`: attempt 2, due at
/// 150 ms, waits for attempt 1 to fail (at 400 ms) and starts then; attempt 3 starts as attempt
/// 2 fails (at 500 ms, before its own staggered start at 550 ms). Never two attempts at once,
/// none cancelled. An attempt that hangs holds the one slot until the deadline.
#[tokio::test(start_paused = true)]
async fn one_attempt_in_flight_makes_a_plain_retry_under_total() {
    let probe = Probe::new(&[Fail(400), Fail(100), Answer(50)]);
    let (result, attempts) = observe(one_at_a_time(&probe)).await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(probe.elapsed(), ms(550));
    assert_eq!(probe.starts(), [ms(0), ms(400), ms(500)]);
    assert_eq!((probe.peak(), probe.cancelled()), (1, vec![]));
    assert_eq!(
        attempts,
        [
            attempt("one_at_a_time", 1, 0, 400, Outcome::Failed),
            attempt("one_at_a_time", 2, 400, 100, Outcome::Failed),
            attempt("one_at_a_time", 3, 500, 50, Outcome::Won),
        ]
    );

    let probe = Probe::new(&[Hang, Answer(0)]);
    let error = one_at_a_time(&probe).await.unwrap_err();
    let rejected = error.rejected();
    assert!(rejected.is_deadline(), "{rejected}");
    assert!(rejected.to_string().contains("1 attempt"), "{rejected}");
    assert_eq!(probe.elapsed(), ms(2000));
    assert_eq!(probe.starts(), [ms(0)]);
    assert_eq!(probe.cancelled(), [(1, ms(2000))]);
    let stats = stats("one_at_a_time");
    assert_eq!((stats.extra_attempts, stats.deadlines), (2, 1));
}

#[race_retry(
    retries = 3,
    after = "100ms",
    total = "2s",
    backoff = "off",
    max_attempts_in_flight = 2
)]
async fn two_at_a_time(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// With `max_attempts_in_flight = 2`, attempts stagger by `after` up to two at once; attempt 3,
/// due at 200 ms, waits until one of the two ends (attempt 1 fails at 250 ms), and attempt 4
/// waits likewise for attempt 3's failure, the attempt in flight racing on (attempt 2 wins).
#[tokio::test(start_paused = true)]
async fn a_due_attempt_waits_until_fewer_than_n_run() {
    let probe = Probe::new(&[Fail(250), Answer(600), Fail(100), Hang]);
    assert_eq!(two_at_a_time(&probe).await.unwrap(), 2);
    assert_eq!(probe.elapsed(), ms(700));
    assert_eq!(probe.starts(), [ms(0), ms(100), ms(250), ms(350)]);
    assert_eq!(probe.peak(), 2);
    assert_eq!(probe.cancelled(), [(4, ms(700))]);
    assert_eq!(probe.live(), 0);
}

/// From code and by name: the builder takes it (and refuses 0 with the rule's message), the
/// policy says it, and a run-time setting reaches a live policy on its next call.
#[tokio::test(start_paused = true)]
async fn max_attempts_in_flight_from_the_builder_and_by_name() {
    use resiliency::settings::{self, Policy};

    let policy = built(
        "race_retry::capped_builder",
        2,
        race_retry::After::Fixed(ms(100)),
        ms(1000),
    )
    .max_attempts_in_flight(1)
    .register()
    .unwrap();
    assert_eq!(policy.max_attempts_in_flight(), Some(1));
    let probe = Probe::new(&[Hang, Hang, Hang]);
    let error = policy.run(|| probe.attempt()).await.unwrap_err();
    assert!(error.rejected().is_deadline());
    assert_eq!(probe.starts(), [ms(0)]);

    let refused = built(
        "race_retry::capped_zero",
        2,
        race_retry::After::Fixed(ms(100)),
        ms(1000),
    )
    .max_attempts_in_flight(0)
    .build()
    .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "race_retry `race_retry::capped_zero`: `max_attempts_in_flight` must be at least 1: \
         `max_attempts_in_flight = 1` runs one attempt at a time (a plain retry); leave it out to \
         let every attempt run at once"
    );
    assert!(built(
        "race_retry::uncapped",
        2,
        race_retry::After::Fixed(ms(100)),
        ms(1000)
    )
    .build()
    .unwrap()
    .max_attempts_in_flight()
    .is_none());

    let site = "race_retry::capped_builder";
    settings::set(Policy::RaceRetry, site, "max_attempts_in_flight", 3).unwrap();
    assert_eq!(policy.max_attempts_in_flight(), Some(3));
    let probe = Probe::new(&[Hang, Hang, Hang]);
    policy.run(|| probe.attempt()).await.unwrap_err();
    assert_eq!(probe.starts(), [ms(0), ms(100), ms(200)]);
    let bad = settings::set(Policy::RaceRetry, site, "max_attempts_in_flight", 0).unwrap_err();
    assert!(bad.to_string().contains("at least 1"), "{bad}");
    settings::unset(Policy::RaceRetry, site, "max_attempts_in_flight").unwrap();
    assert_eq!(
        policy.max_attempts_in_flight(),
        Some(1),
        "the builder's value again"
    );
}

// ---------------------------------------------------------------------------------------------
// The retry budget

// These fns back off not (`backoff = "off"`), so that calls come at the pace the tests set.

#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off")]
async fn budgeted() -> Result<u32, Error> {
    Err(Error::Attempt(0))
}

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "450ms",
    budget = 0.1,
    backoff = "off"
)]
async fn budgeted_explicitly() -> Result<u32, Error> {
    Err(Error::Attempt(0))
}

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "450ms",
    budget = "off",
    backoff = "off"
)]
async fn unbudgeted() -> Result<u32, Error> {
    Err(Error::Attempt(0))
}

/// An outage (every attempt fails at once), 1000 calls 10 ms apart (10 s): by default (as with
/// `budget = 0.1`) extra attempts are bounded by 10% of the calls (100) plus the floor's first
/// burst (10). The deposits (10 tokens a second) reach the floor's rate, so the floor adds nothing
/// more; the same fn with `budget = "off"` makes 2000.
#[tokio::test(start_paused = true)]
async fn the_budget_bounds_extra_attempts_to_its_share_plus_the_floor() {
    for _ in 0..1000 {
        assert!(budgeted().await.is_err());
        assert!(budgeted_explicitly().await.is_err());
        assert!(unbudgeted().await.is_err());
        sleep(ms(10)).await;
    }
    let with = stats("budgeted");
    let without = stats("unbudgeted");
    assert_eq!(without.extra_attempts, 2000);
    assert_eq!(without.budget_refused, 0);
    assert!(
        (100..=110).contains(&with.extra_attempts),
        "{} extra attempts with the default budget: {with:?}",
        with.extra_attempts
    );
    // Each call that is refused is refused once: it then ends with attempt 1's error.
    assert!(with.budget_refused >= 800, "{with:?}");
    assert!(with.budget_balance < 1.0, "{with:?}");
    let explicit = stats("budgeted_explicitly");
    assert_eq!(
        (explicit.extra_attempts, explicit.budget_refused),
        (with.extra_attempts, with.budget_refused),
        "the default is budget = 0.1"
    );
}

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "450ms",
    budget = 0.1,
    backoff = "off"
)]
async fn burst() -> Result<u32, Error> {
    Err(Error::Attempt(0))
}

/// 100 failing calls at one instant: the floor's 10 banked attempts go to the first 5 calls (two
/// extras each), then every 10th call has deposited one whole token and gets one extra attempt:
/// 20 extra attempts, 95 refusals.
#[tokio::test(start_paused = true)]
async fn a_burst_spends_the_floor_then_only_the_deposits() {
    for _ in 0..100 {
        assert!(burst().await.is_err());
    }
    let stats = stats("burst");
    assert_eq!(stats.extra_attempts, 20, "{stats:?}");
    assert_eq!(stats.budget_refused, 95, "{stats:?}");
    assert_eq!(stats.budget_balance, 0.0, "{stats:?}");
}

#[race_retry(retries = 1, after = "100ms", total = "1s", budget = 0.1)]
async fn deposited_on_threads() -> Result<u32, Error> {
    Ok(1)
}

/// Calls on many threads deposit to the budget one batch of 16 calls at a time, each thread on
/// its own part of it; what they deposited is counted whole wherever it is read (the balance, a
/// withdrawal): 4 threads of 32 calls at 10% bank 12.8 tokens.
#[test]
fn deposits_from_many_threads_are_counted_whole() {
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..32 {
                    assert_eq!(block_on_without_tokio(deposited_on_threads()).unwrap(), 1);
                }
            });
        }
    });
    assert_eq!(stats("deposited_on_threads").budget_balance, 12.8);
}

#[race_retry(retries = 1, after = "100ms", total = "1s", backoff = "50ms")]
async fn refused_early(probe: Arc<Probe>) -> Result<u32, Error> {
    probe.attempt().await
}

/// A call the budget refuses ends when its attempt fails, not after a backoff for nothing: with
/// no other attempt running, the replacement's token is taken at the failure. 30 calls at one
/// instant whose attempt 1 fails at 10 ms: the floor's burst (10) and the calls' deposits (3)
/// pay for 13 replacements, started after their backoff; the 17 refused calls return attempt 1's
/// error at 10 ms.
#[tokio::test(start_paused = true)]
async fn a_call_the_budget_refuses_ends_at_its_failure_without_a_backoff() {
    let calls: Vec<_> = (0..30)
        .map(|_| {
            let probe = Arc::new(Probe::new(&[Fail(10), Answer(5)]));
            let call = tokio::spawn({
                let probe = Arc::clone(&probe);
                async move {
                    let output = refused_early(Arc::clone(&probe)).await;
                    (output, probe.elapsed())
                }
            });
            (probe, call)
        })
        .collect();
    let mut refused = 0;
    for (probe, call) in calls {
        match call.await.unwrap() {
            (Ok(2), _) => assert_eq!(probe.starts().len(), 2),
            (Err(Error::Attempt(1)), ended) => {
                assert_eq!(ended, ms(10));
                assert_eq!(probe.starts(), [ms(0)]);
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    let stats = stats("refused_early");
    assert_eq!((stats.budget_refused, refused), (17, 17), "{stats:?}");
    assert_eq!(stats.extra_attempts, 13, "{stats:?}");
}

#[race_retry(retries = 2, after = "100ms", total = "450ms")]
async fn slow_upstream(probe: Arc<Probe>) -> Result<u32, Error> {
    probe.attempt().await
}

/// With the defaults, 20 calls at once against an upstream that answers every attempt in 300 ms
/// (`after = "100ms"`) make 33 attempts, not 60: at 100 ms the calls' deposits (20 x 0.1 = 2
/// tokens) and the floor's burst (10) pay for 12 second attempts, the other 8 calls are refused;
/// at 200 ms the floor has refilled one token (10 a second) for one third attempt, and 11 are
/// refused.
#[tokio::test(start_paused = true)]
async fn with_the_defaults_a_slow_upstream_meets_the_budget_not_three_times_its_load() {
    let probes: Vec<_> = (0..20)
        .map(|_| Arc::new(Probe::new(&[Answer(300), Answer(300), Answer(300)])))
        .collect();
    let calls: Vec<_> = probes
        .iter()
        .map(|probe| tokio::spawn(slow_upstream(Arc::clone(probe))))
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), 1);
    }
    let attempts: usize = probes.iter().map(|p| p.starts().len()).sum();
    assert_eq!(attempts, 33);
    let stats = stats("slow_upstream");
    assert_eq!(
        (stats.extra_attempts, stats.budget_refused),
        (13, 19),
        "{stats:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The learned percentile

#[race_retry(retries = 2, after = "p50", total = "600ms")]
async fn learned(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// `after = "p50"`: before 32 latencies were seen the next attempt starts `total / (retries + 1)`
/// (200 ms) after the previous; after 40 calls that answer in 20 ms it starts near 20 ms (within
/// the histogram's bucket holding 20 ms, 12.5% wide; the paused clock fires on the next whole ms).
#[tokio::test(start_paused = true)]
async fn after_a_percentile_is_learned_from_recent_attempts() {
    let probe = Probe::new(&[Answer(250), Hang]);
    assert_eq!(learned(&probe).await.unwrap(), 1);
    assert_eq!(probe.starts(), [ms(0), ms(200)]);
    assert_eq!(probe.elapsed(), ms(250));
    assert_eq!(
        stats("learned").after,
        ms(200),
        "2 samples: not learned yet"
    );

    for _ in 0..40 {
        let probe = Probe::new(&[Answer(20)]);
        assert_eq!(learned(&probe).await.unwrap(), 1);
        assert_eq!(probe.starts(), [ms(0)]);
    }
    let after = stats("learned").after;
    assert!(
        after >= ms(18) && after <= Duration::from_micros(22_500),
        "p50 of mostly 20 ms attempts: {after:?}"
    );

    let probe = Probe::new(&[Hang, Answer(5)]);
    assert_eq!(learned(&probe).await.unwrap(), 2);
    let second = probe.starts()[1];
    assert!(
        second >= after && second <= after + ms(1),
        "the hedge started at {second:?}, the learned p50 is {after:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Argument shapes

struct Directory {
    prefix: String,
    hits: AtomicU32,
}

impl Directory {
    #[race_retry(retries = 2, after = "150ms", total = "450ms")]
    async fn lookup(&self, id: u64, region: &str) -> Result<String, Error> {
        let n = self.hits.fetch_add(1, SeqCst) + 1;
        if n == 1 {
            pending::<()>().await;
        }
        sleep(ms(20)).await;
        Ok(format!("{}{id}@{region}#{n}", self.prefix))
    }
}

/// A `&self` method with a borrowed `&str`: every attempt sees the same `self`; the second
/// answers at 170 ms. Its stats are under the method's path.
#[tokio::test(start_paused = true)]
async fn a_method_with_self_and_borrowed_args() {
    let directory = Directory {
        prefix: "user".to_owned(),
        hits: AtomicU32::new(0),
    };
    let region = String::from("eu");
    let start = Instant::now();
    let user = directory.lookup(7, &region).await.unwrap();
    assert_eq!(user, "user7@eu#2");
    assert_eq!(start.elapsed(), ms(170));
    assert_eq!(directory.hits.load(SeqCst), 2);
    assert_eq!(
        race_retry::stats("suite::race_retry::Directory::lookup")
            .unwrap_or_else(|| panic!("{:?}", race_retry::names()))
            .won_by_extra,
        1
    );
}

/// A service passed by value: each attempt gets its own clone of `self` (counted), and a
/// `mut self` changes only its own copy.
struct Session {
    name: String,
    clones: Arc<AtomicU32>,
    attempts: Arc<AtomicU32>,
}

impl Session {
    #[race_retry(retries = 2, after = "100ms", total = "1s")]
    async fn greet(mut self, who: &str) -> Result<String, Error> {
        let n = self.attempts.fetch_add(1, SeqCst) + 1;
        self.name.push_str(&format!("#{n}"));
        if n == 1 {
            pending::<()>().await;
        }
        sleep(ms(10)).await;
        Ok(format!("{} greets {who}", self.name))
    }

    #[race_retry(retries = 1, after = "50ms", total = "1s")]
    async fn shared(self: Arc<Self>) -> Result<String, Error> {
        let n = self.attempts.fetch_add(1, SeqCst) + 1;
        if n == 1 {
            pending::<()>().await;
        }
        Ok(format!(
            "{}: attempt {n}, {} refs",
            self.name,
            Arc::strong_count(&self)
        ))
    }
}

impl Session {
    fn new(name: &str) -> Self {
        Session {
            name: name.to_owned(),
            clones: Arc::new(AtomicU32::new(0)),
            attempts: Arc::new(AtomicU32::new(0)),
        }
    }
}

/// A `Clone` that counts, so the test sees one clone per attempt.
impl Clone for Session {
    fn clone(&self) -> Self {
        self.clones.fetch_add(1, SeqCst);
        Session {
            name: self.name.clone(),
            clones: self.clones.clone(),
            attempts: self.attempts.clone(),
        }
    }
}

/// `self` by value: attempt 1 hangs, attempt 2 starts at 100 ms with its own copy of `self` (its
/// `#2` is not in attempt 1's copy) and answers at 110 ms.
#[tokio::test(start_paused = true)]
async fn an_owned_self_is_cloned_for_each_attempt() {
    let session = Session::new("ann");
    let start = Instant::now();
    let greeting = session.clone().greet("bob").await.unwrap();
    assert_eq!(greeting, "ann#2 greets bob");
    assert_eq!(start.elapsed(), ms(110));
    assert_eq!(session.attempts.load(SeqCst), 2);
    // The caller's clone, then one per attempt.
    assert_eq!(session.clones.load(SeqCst), 3);
    assert_eq!(session.name, "ann", "the caller's value is untouched");
}

/// `self: Arc<Self>`: each attempt holds its own `Arc` (the caller's, the call's and the
/// attempts' two), and the call returns with all of them but the caller's dropped.
#[tokio::test(start_paused = true)]
async fn an_arc_self_is_shared_by_attempts() {
    let session = Arc::new(Session::new("cy"));
    let start = Instant::now();
    let out = session.clone().shared().await.unwrap();
    assert_eq!(out, "cy: attempt 2, 4 refs");
    assert_eq!(start.elapsed(), ms(50));
    assert_eq!(Arc::strong_count(&session), 1);
}

#[race_retry(retries = 1, after = "50ms", total = "450ms")]
async fn show<T: Clone + Display>(value: T, probe: &Probe) -> Result<String, Error> {
    let n = probe.attempt().await?;
    Ok(format!("{value}#{n}"))
}

/// A generic fn (`T: Clone + Display`), called with two types.
#[tokio::test(start_paused = true)]
async fn a_generic_fn() {
    let probe = Probe::new(&[Hang, Answer(5)]);
    assert_eq!(show(42u32, &probe).await.unwrap(), "42#2");
    assert_eq!(probe.elapsed(), ms(55));
    let probe = Probe::new(&[Answer(5)]);
    assert_eq!(show(String::from("x"), &probe).await.unwrap(), "x#1");
}

type Seen = Mutex<Vec<(usize, String)>>;

#[race_retry(retries = 2, after = "100ms", total = "450ms")]
async fn owned(text: String, seen: &Seen, probe: &Probe) -> Result<u32, Error> {
    seen.lock()
        .unwrap()
        .push((text.as_ptr() as usize, text.clone()));
    probe.attempt().await
}

/// An owned argument is cloned for each attempt: three attempts alive at once each see an equal
/// `String` in a buffer of its own, none the caller's.
#[tokio::test(start_paused = true)]
async fn owned_args_are_cloned_for_each_attempt() {
    let probe = Probe::new(&[Hang, Hang, Answer(10)]);
    let seen = Seen::default();
    let text = String::from("hello");
    let callers = text.as_ptr() as usize;
    assert_eq!(owned(text, &seen, &probe).await.unwrap(), 3);
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|(_, text)| text == "hello"));
    let mut buffers: Vec<usize> = seen.iter().map(|(ptr, _)| *ptr).collect();
    assert!(
        !buffers.contains(&callers),
        "an attempt got the caller's String"
    );
    buffers.sort();
    buffers.dedup();
    assert_eq!(buffers.len(), 3, "two attempts shared one String");
}

#[race_retry(retries = 1, after = "50ms", total = "450ms")]
async fn by_str(key: &str, probe: &Probe) -> Result<String, Error> {
    let n = probe.attempt().await?;
    Ok(format!("{key}#{n}"))
}

#[race_retry(retries = 1, after = "50ms", total = "450ms", backoff = "off")]
async fn by_as_ref(key: impl AsRef<str> + Clone, probe: &Probe) -> Result<String, Error> {
    let n = probe.attempt().await?;
    Ok(format!("{}#{n}", key.as_ref()))
}

/// `&str` and `impl AsRef<str> + Clone` arguments (a `&'static str`, a `String`).
#[tokio::test(start_paused = true)]
async fn str_and_impl_trait_args() {
    let key = String::from("k");
    let probe = Probe::new(&[Hang, Answer(1)]);
    assert_eq!(by_str(&key, &probe).await.unwrap(), "k#2");
    let probe = Probe::new(&[Hang, Answer(1)]);
    assert_eq!(by_as_ref("lit", &probe).await.unwrap(), "lit#2");
    let probe = Probe::new(&[Fail(1), Answer(1)]);
    assert_eq!(by_as_ref(key.clone(), &probe).await.unwrap(), "k#2");
    assert_eq!(probe.starts(), [ms(0), ms(1)]);
}

#[race_retry(retries = 1, after = "50ms", total = "450ms")]
async fn by_tuple((id, label): (u32, String), probe: &Probe) -> Result<String, Error> {
    let n = probe.attempt().await?;
    Ok(format!("{label}{id}#{n}"))
}

/// A tuple pattern as an argument: each attempt gets its own copy of every binding.
#[tokio::test(start_paused = true)]
async fn tuple_pattern_args() {
    let probe = Probe::new(&[Hang, Answer(1)]);
    assert_eq!(
        by_tuple((9, "id".to_owned()), &probe).await.unwrap(),
        "id9#2"
    );
}

#[race_retry(retries = 1, after = "50ms", total = "450ms")]
async fn by_arc(shared: Arc<AtomicU32>, probe: &Probe) -> Result<usize, Error> {
    shared.fetch_add(1, SeqCst);
    let count = Arc::strong_count(&shared);
    probe.attempt().await?;
    Ok(count)
}

/// An `Arc<T>` argument: every attempt holds a clone of the one `Arc` (both increments land on
/// the caller's counter), and every clone is released when the call returns.
#[tokio::test(start_paused = true)]
async fn arc_args_are_shared_and_released() {
    let shared = Arc::new(AtomicU32::new(0));
    let probe = Probe::new(&[Hang, Answer(1)]);
    let count = by_arc(Arc::clone(&shared), &probe).await.unwrap();
    assert!(
        count >= 3,
        "the caller's, attempt 1's and attempt 2's: {count}"
    );
    assert_eq!(shared.load(SeqCst), 2);
    assert_eq!(Arc::strong_count(&shared), 1);
}

// FIXME(macro): written as users would, `mut log` does not compile: the expansion copies each
// argument for an attempt with `let log = attempt_arg(&log);`, dropping the `mut`, so the body's
// `log.push(..)` is E0596 (and the signature's `mut` is `unused_mut`). Until the expansion keeps
// the `mut`, the body rebinds the copy, and the `mut` in the signature needs the `allow`.
#[race_retry(retries = 1, after = "50ms", total = "450ms")]
#[allow(unused_mut)]
async fn by_mut(mut log: Vec<u32>, probe: &Probe) -> Result<Vec<u32>, Error> {
    let mut log = log;
    log.push(log.len() as u32);
    let n = probe.attempt().await?;
    log.push(n);
    Ok(log)
}

/// A `mut` binding: each attempt mutates its own copy (attempt 2 does not see attempt 1's push).
#[tokio::test(start_paused = true)]
async fn mut_bindings() {
    let probe = Probe::new(&[Hang, Answer(1)]);
    assert_eq!(by_mut(vec![7], &probe).await.unwrap(), [7, 1, 2]);
}

#[race_retry(retries = 2, after = "10ms", total = "450ms")]
async fn in_task(ids: &Mutex<Vec<Option<tokio::task::Id>>>, probe: &Probe) -> Result<u32, Error> {
    ids.lock().unwrap().push(tokio::task::try_id());
    probe.attempt().await
}

/// Attempts run inside the caller's task (nothing is spawned): each sees the caller's task id.
#[tokio::test(start_paused = true)]
async fn attempts_run_in_the_callers_task() {
    let (caller, ids) = tokio::spawn(async {
        let ids = Mutex::new(Vec::new());
        let probe = Probe::new(&[Hang, Hang, Answer(1)]);
        in_task(&ids, &probe).await.unwrap();
        (tokio::task::id(), ids.into_inner().unwrap())
    })
    .await
    .unwrap();
    assert_eq!(ids, [Some(caller); 3]);
}

// ---------------------------------------------------------------------------------------------
// Send

fn assert_send<T: Send>(_: &T) {}

#[race_retry(retries = 1, after = "50ms", total = "450ms")]
async fn owned_static(text: String, n: u32) -> Result<String, Error> {
    sleep(ms(1)).await;
    Ok(format!("{text}{n}"))
}

/// The future of a raced fn is `Send` when its body's is: free fns, methods, generic fns, owned
/// and borrowed arguments; a call can be `tokio::spawn`ed.
#[tokio::test(start_paused = true)]
async fn futures_are_send_when_the_body_is() {
    let probe = Probe::new(&[]);
    let directory = Directory {
        prefix: String::new(),
        hits: AtomicU32::new(0),
    };
    let seen = Seen::default();
    assert_send(&staggered(&probe));
    assert_send(&directory.lookup(1, "eu"));
    assert_send(&show(1u32, &probe));
    assert_send(&owned(String::new(), &seen, &probe));
    assert_send(&by_as_ref("k", &probe));
    assert_send(&by_arc(Arc::new(AtomicU32::new(0)), &probe));
    assert_send(&budgeted());
    let spawned = tokio::spawn(owned_static("n".to_owned(), 1));
    assert_eq!(spawned.await.unwrap().unwrap(), "n1");
}

// ---------------------------------------------------------------------------------------------
// Stacking with #[breaker]

#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off")]
#[resiliency::breaker(error_threshold = 2, error_timeout = "30s")]
async fn per_attempt(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

#[resiliency::breaker(error_threshold = 2, error_timeout = "30s")]
#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off")]
async fn around_race(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// `#[race_retry]` above `#[breaker]`: the breaker guards each attempt. Attempts 1 and 2 fail, the
/// second error opens the breaker within the one call, and attempt 3 (which would have answered)
/// is refused without running: the call ends with `Rejected::is_circuit_open`.
#[tokio::test(start_paused = true)]
async fn race_above_breaker_guards_each_attempt() {
    let probe = Probe::new(&[Fail(10), Fail(10), Answer(10)]);
    let error = per_attempt(&probe).await.unwrap_err();
    assert!(error.rejected().is_circuit_open(), "{error:?}");
    assert_eq!(probe.elapsed(), ms(20));
    assert_eq!(probe.starts(), [ms(0), ms(10)], "attempt 3 never ran");
    let breaker = breaker::get("suite::race_retry::per_attempt")
        .unwrap_or_else(|| panic!("breakers: {:?}", breaker::names()));
    assert_eq!(breaker.state(), State::Open);
}

/// `#[breaker]` above `#[race_retry]`: the breaker guards the whole race and counts one outcome
/// per call. The same script as above answers (attempt 3, at 30 ms) and leaves it closed; two
/// calls whose three attempts all fail are two errors, which open it; the next call is refused
/// before any attempt.
#[tokio::test(start_paused = true)]
async fn breaker_above_race_counts_one_outcome_per_call() {
    let probe = Probe::new(&[Fail(10), Fail(10), Answer(10)]);
    assert_eq!(around_race(&probe).await.unwrap(), 3);
    assert_eq!(probe.elapsed(), ms(30));
    let breaker = breaker::get("suite::race_retry::around_race")
        .unwrap_or_else(|| panic!("breakers: {:?}", breaker::names()));
    assert_eq!(breaker.state(), State::Closed);

    let probe = Probe::new(&[Fail(10), Fail(10), Fail(10)]);
    assert_eq!(around_race(&probe).await.unwrap_err().failed_attempt(), 3);
    assert_eq!(
        breaker.state(),
        State::Closed,
        "three attempt errors are one error"
    );
    let probe = Probe::new(&[Fail(10), Fail(10), Fail(10)]);
    assert_eq!(around_race(&probe).await.unwrap_err().failed_attempt(), 3);
    assert_eq!(breaker.state(), State::Open);

    let probe = Probe::new(&[Answer(0)]);
    let error = around_race(&probe).await.unwrap_err();
    assert!(error.rejected().is_circuit_open(), "{error:?}");
    assert!(probe.starts().is_empty(), "no attempt ran");
}

// ---------------------------------------------------------------------------------------------
// Observing attempts

#[race_retry(retries = 2, after = "150ms", total = "450ms", backoff = "off")]
async fn observed(probe: &Probe) -> Result<u32, Error> {
    probe.attempt().await
}

/// `race_retry::observe` reports every attempt in the order they ended, with when each started (after
/// the call started) and how long it ran: attempt 2 failed (150 ms, ran 30 ms), attempt 3 started
/// at once (`backoff = "off"`) and won (180 ms, 20 ms), attempt 1 lost (0 ms, cancelled after 200 ms). Calls outside
/// an `observe` report nothing to it.
#[tokio::test(start_paused = true)]
async fn observe_reports_winners_and_losers() {
    let probe = Probe::new(&[Hang, Fail(30), Answer(20)]);
    let (result, attempts) = observe(observed(&probe)).await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(
        attempts,
        [
            attempt("observed", 2, 150, 30, Outcome::Failed),
            attempt("observed", 3, 180, 20, Outcome::Won),
            attempt("observed", 1, 0, 200, Outcome::Lost),
        ]
    );

    // Two calls inside one observe: both calls' attempts; a call before it: none.
    let before = Probe::new(&[Answer(1)]);
    observed(&before).await.unwrap();
    let (first, second) = (Probe::new(&[Answer(5)]), Probe::new(&[Fail(1), Answer(2)]));
    let ((a, b), attempts) = observe(async {
        let a = observed(&first).await;
        let b = observed(&second).await;
        (a, b)
    })
    .await;
    assert_eq!((a.unwrap(), b.unwrap()), (1, 2));
    assert_eq!(
        attempts,
        [
            attempt("observed", 1, 0, 5, Outcome::Won),
            attempt("observed", 1, 0, 1, Outcome::Failed),
            attempt("observed", 2, 1, 2, Outcome::Won),
        ]
    );
}

// (The `tracing` events are checked in tests/race_retry_tracing.rs, a binary of its own: a
// subscriber scoped to one test thread races with callsites registered by the others.)

// ---------------------------------------------------------------------------------------------
// No tokio runtime

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn without_tokio(fail_first: bool, calls: &AtomicU32) -> Result<u32, Error> {
    let n = calls.fetch_add(1, SeqCst) + 1;
    YieldOnce(false).await;
    if fail_first && n == 1 {
        Err(Error::Attempt(n))
    } else {
        Ok(n)
    }
}

/// Outside a tokio runtime there are no timers: attempt 1 runs alone and its `Ok` is returned
/// (no hedge starts while it waits); a failed attempt still starts the next, at once (there is no
/// timer to back off with).
#[test]
fn outside_tokio_attempts_run_without_timers() {
    assert!(tokio::runtime::Handle::try_current().is_err());
    let calls = AtomicU32::new(0);
    assert_eq!(
        block_on_without_tokio(without_tokio(false, &calls)).unwrap(),
        1
    );
    assert_eq!(calls.load(SeqCst), 1);

    let calls = AtomicU32::new(0);
    assert_eq!(
        block_on_without_tokio(without_tokio(true, &calls)).unwrap(),
        2
    );
    assert_eq!(calls.load(SeqCst), 2);
}
