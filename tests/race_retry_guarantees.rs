//! The "Guarantees" of `#[race_retry]` and `resiliency::race_retry`, through the facade: what holds when
//! an attempt's body, its destructor or `retry_if` panics, when a call is dropped at any point,
//! when the runtime has no time driver, when an observed future panics, and with extreme settings
//! (durations up to `Duration::MAX`, out-of-range shares and quantiles). On tokio's paused clock.
//!
//! Attempts are reported to `observe` with how they ended; a call that panics is observed through
//! [`catch`], which turns the panic into an error and drops the call at once (as tokio drops a
//! task that panicked), so that what the call reports as it is dropped reaches the `observe`
//! around it.
//!
//! No test here installs a `tracing` subscriber: [`reported_here`] tells whether this thread's
//! raced calls are reported by when their clock starts, which a subscriber would change too.

use std::future::{pending, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::LazyLock;
use std::task::{Context, Poll};
use std::time::Duration;

use resiliency::race_retry::{
    observe, After, Attempt, RaceRetry, RaceRetryBuilder, RaceRetryStats, MAX_RETRIES,
};
use resiliency::{race_retry, Rejected};
use tokio::time::{sleep, timeout, Instant};

/// Settings past the rules that `RaceRetry::builder` (and the attribute) enforce: an `after` or
/// `each` at or above `total`, zero durations, quantiles and budget shares out of range. No public
/// constructor builds them; `__private::race_retry_unchecked` does ([`unchecked`]), for these
/// tests, and the policy must stand them all the same.
fn past_rules(name: &'static str, retries: u32, after: After, total: Duration) -> RaceRetryBuilder {
    RaceRetry::builder(name)
        .retries(retries)
        .after(after)
        .total(total)
}

/// The policy of `options`, no rule checked (values past them clamped as the policy clamps).
fn unchecked(options: RaceRetryBuilder) -> RaceRetry {
    resiliency::__private::race_retry_unchecked(options)
}

/// What attempt k of a call does. A wait of 0 ms means at once, without awaiting.
#[derive(Copy, Clone, Debug)]
enum Step {
    /// `Ok(k)` after this many ms.
    Answer(u64),
    /// `Err(Error::Attempt(k))` after this many ms.
    Fail(u64),
    /// `Err(Error::Fatal(k))` after this many ms.
    Fatal(u64),
    /// Panics ("attempt k panics") after this many ms.
    Panic(u64),
    /// Never ends.
    Hang,
    /// Never ends; its destructor panics ("an attempt's destructor panics").
    HangPanickingOnDrop,
    /// Never ends; its destructor blocks the thread for 20 ms.
    HangSlowDrop,
}

use Step::{Answer, Fail, Fatal, Hang, HangPanickingOnDrop, HangSlowDrop, Panic};

mod support;
use support::{ms, RaceError as Error};

/// One call's script, and how many of its attempts were made and are alive.
struct Script {
    steps: Vec<Step>,
    made: AtomicU32,
    live: AtomicU32,
}

impl Script {
    /// Attempts beyond the script hang.
    fn new(steps: &[Step]) -> Script {
        Script {
            steps: steps.to_vec(),
            made: AtomicU32::new(0),
            live: AtomicU32::new(0),
        }
    }

    /// A script that lives as long as the test binary (for a spawned task).
    fn leaked(steps: &[Step]) -> &'static Script {
        Box::leak(Box::new(Script::new(steps)))
    }

    async fn attempt(&self) -> Result<u32, Error> {
        let n = self.made.fetch_add(1, SeqCst) + 1;
        let _alive = Alive::new(&self.live);
        match self.steps.get(n as usize - 1).copied().unwrap_or(Hang) {
            Answer(after) => {
                wait(after).await;
                Ok(n)
            }
            Fail(after) => {
                wait(after).await;
                Err(Error::Attempt(n))
            }
            Fatal(after) => {
                wait(after).await;
                Err(Error::Fatal(n))
            }
            Panic(after) => {
                wait(after).await;
                panic!("attempt {n} panics");
            }
            Hang => pending().await,
            HangPanickingOnDrop => {
                let _bomb = PanicOnDrop;
                pending().await
            }
            HangSlowDrop => {
                let _slow = SlowDrop;
                pending().await
            }
        }
    }

    /// Attempts made so far.
    fn made(&self) -> u32 {
        self.made.load(SeqCst)
    }

    /// Attempt futures alive now.
    fn live(&self) -> u32 {
        self.live.load(SeqCst)
    }
}

async fn wait(after: u64) {
    if after > 0 {
        sleep(ms(after)).await;
    }
}

struct Alive<'a>(&'a AtomicU32);

impl<'a> Alive<'a> {
    fn new(live: &'a AtomicU32) -> Self {
        live.fetch_add(1, SeqCst);
        Alive(live)
    }
}

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("an attempt's destructor panics");
        }
    }
}

struct SlowDrop;

impl Drop for SlowDrop {
    fn drop(&mut self) {
        std::thread::sleep(ms(20));
    }
}

/// `future`'s output, or the message of the panic its poll raised; the future is dropped as soon
/// as it ends either way.
fn catch<F: Future>(future: F) -> Catch<F> {
    Catch(Some(Box::pin(future)))
}

struct Catch<F>(Option<Pin<Box<F>>>);

impl<F: Future> Future for Catch<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.0.as_mut().expect("polled after it ended");
        let poll = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)));
        let output = match poll {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(output)) => Ok(output),
            Err(panic) => Err(message(panic)),
        };
        self.0 = None;
        Poll::Ready(output)
    }
}

fn message(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(text) => *text,
        Err(panic) => panic
            .downcast_ref::<&str>()
            .map_or_else(|| "a panic without a message".into(), |s| (*s).into()),
    }
}

/// The attempts as (number, outcome, started ms, ran ms).
fn seen(attempts: &[Attempt]) -> Vec<(u32, String, u64, u64)> {
    attempts
        .iter()
        .map(|a| {
            (
                a.number,
                format!("{:?}", a.outcome),
                a.started.as_millis() as u64,
                a.elapsed.as_millis() as u64,
            )
        })
        .collect()
}

fn step(number: u32, outcome: &str, started: u64, ran: u64) -> (u32, String, u64, u64) {
    (number, outcome.to_string(), started, ran)
}

/// The stats of a raced fn of this file (after its first call).
fn stats(function: &str) -> RaceRetryStats {
    let name = format!("{}::{function}", module_path!());
    race_retry::stats(&name).unwrap_or_else(|| panic!("no stats for {name}"))
}

/// The counters of `after` less those of `before`: (extra attempts, wins by them, budget
/// refusals, deadlines).
fn counted(before: RaceRetryStats, after: RaceRetryStats) -> (u64, u64, u64, u64) {
    (
        after.extra_attempts - before.extra_attempts,
        after.won_by_extra - before.won_by_extra,
        after.budget_refused - before.budget_refused,
        after.deadlines - before.deadlines,
    )
}

/// A policy's builder with its required settings.
fn built(name: &'static str, retries: u32, after: After, total: Duration) -> RaceRetryBuilder {
    RaceRetry::builder(name)
        .retries(retries)
        .after(after)
        .total(total)
}

static PROBE: LazyLock<RaceRetry> = LazyLock::new(|| {
    built(
        "guarantees::reported_here",
        1,
        After::Fixed(ms(150)),
        ms(1000),
    )
    .build()
    .unwrap()
});

/// Whether raced calls on this thread report their attempts, as they do inside `observe`. Such a
/// call's clock starts before its first poll; an unreported call's when its attempt 1 first waits.
/// Here attempt 1 spends 100 ms of the paused clock in its first poll and then hangs, and attempt
/// 2 starts `after` (150 ms) after the call's clock started: at 150 ms when the call is reported,
/// at 250 ms when it is not.
async fn reported_here() -> bool {
    let t0 = Instant::now();
    let mut attempts = 0;
    let second_started = PROBE
        .run(|| {
            attempts += 1;
            let first = attempts == 1;
            async move {
                if first {
                    tokio::time::advance(ms(100)).await;
                    pending::<()>().await;
                }
                Ok::<_, Rejected>(t0.elapsed())
            }
        })
        .await
        .unwrap();
    match second_started.as_millis() {
        150 => true,
        250 => false,
        other => panic!("attempt 2 started at {other} ms"),
    }
}

// ---------------------------------------------------------------------------------------------
// Durations up to `Duration::MAX`

static TOTAL_MAX: LazyLock<RaceRetry> = LazyLock::new(|| {
    built(
        "guarantees::total_max",
        2,
        After::Fixed(ms(100)),
        Duration::MAX,
    )
    .build()
    .unwrap()
});
static TOTAL_MAX_LEARNED: LazyLock<RaceRetry> = LazyLock::new(|| {
    built(
        "guarantees::total_max_learned",
        1,
        After::Percentile(0.95),
        Duration::MAX,
    )
    .build()
    .unwrap()
});

/// `total = Duration::MAX` is no deadline: attempts start 100 ms apart and the third answers at
/// 250 ms. With a learned `after` (`total / (retries + 1)` until it has learned, `Duration::MAX / 2`
/// here), the first attempt still answers.
#[tokio::test(start_paused = true)]
async fn total_at_duration_max_is_no_deadline() {
    let t0 = Instant::now();
    let script = Script::new(&[Hang, Hang, Answer(50)]);
    let answer: Result<u32, Error> = TOTAL_MAX.run(|| script.attempt()).await;
    assert_eq!(answer.unwrap(), 3);
    assert_eq!(t0.elapsed(), ms(250));
    assert_eq!(script.live(), 0);

    let script = Script::new(&[Answer(10)]);
    let answer: Result<u32, Error> = TOTAL_MAX_LEARNED.run(|| script.attempt()).await;
    assert_eq!(answer.unwrap(), 1);
}

static AFTER_MAX: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(past_rules(
        "guarantees::after_max",
        2,
        After::Fixed(Duration::MAX),
        ms(1000),
    ))
});

/// `after = Duration::MAX` starts no hedge: a hanging attempt 1 runs alone until the deadline; a
/// failed one still starts the next, after its backoff (at most a quarter of `total` here, there
/// being no staggered start).
#[tokio::test(start_paused = true)]
async fn after_at_duration_max_starts_no_hedge() {
    let t0 = Instant::now();
    let script = Script::new(&[Hang]);
    let error: Error = AFTER_MAX.run(|| script.attempt()).await.unwrap_err();
    let Error::Rejected(rejected) = error else {
        panic!("{error:?}")
    };
    assert!(rejected.is_deadline());
    assert_eq!((t0.elapsed(), script.made()), (ms(1000), 1));

    assert_eq!(AFTER_MAX.backoff_bound(0), ms(250));
    let t0 = Instant::now();
    let script = Script::new(&[Fail(10), Answer(20)]);
    let answer: Result<u32, Error> = AFTER_MAX.run(|| script.attempt()).await;
    assert_eq!(answer.unwrap(), 2);
    assert!(
        t0.elapsed() >= ms(30) && t0.elapsed() <= ms(281),
        "{:?}",
        t0.elapsed()
    );
}

static EACH_MAX: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(
        past_rules("guarantees::each_max", 2, After::Fixed(ms(100)), ms(1000)).each(Duration::MAX),
    )
});
static ALL_MAX: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(
        past_rules(
            "guarantees::all_max",
            2,
            After::Fixed(Duration::MAX),
            Duration::MAX,
        )
        .each(Duration::MAX),
    )
});

/// `each = Duration::MAX` bounds no attempt: attempt 1 answers at 500 ms while 2 and 3 (started at
/// 100 and 200 ms) hang. With all three at `Duration::MAX`, an attempt that answers after an hour
/// is waited for.
#[tokio::test(start_paused = true)]
async fn each_at_duration_max_bounds_no_attempt() {
    let t0 = Instant::now();
    let script = Script::new(&[Answer(500), Hang, Hang]);
    let answer: Result<u32, Error> = EACH_MAX.run(|| script.attempt()).await;
    assert_eq!(answer.unwrap(), 1);
    assert_eq!(
        (t0.elapsed(), script.made(), script.live()),
        (ms(500), 3, 0)
    );

    let t0 = Instant::now();
    let script = Script::new(&[Answer(3_600_000)]);
    let answer: Result<u32, Error> = ALL_MAX.run(|| script.attempt()).await;
    assert_eq!(answer.unwrap(), 1);
    assert_eq!(t0.elapsed(), Duration::from_secs(3600));
}

// ---------------------------------------------------------------------------------------------
// An observed future that panics

static FAST_A: LazyLock<RaceRetry> = LazyLock::new(|| {
    built("guarantees::a", 1, After::Fixed(ms(100)), ms(1000))
        .build()
        .unwrap()
});
static FAST_B: LazyLock<RaceRetry> = LazyLock::new(|| {
    built("guarantees::b", 1, After::Fixed(ms(100)), ms(1000))
        .build()
        .unwrap()
});
static FAST_C: LazyLock<RaceRetry> = LazyLock::new(|| {
    built("guarantees::c", 1, After::Fixed(ms(100)), ms(1000))
        .build()
        .unwrap()
});

/// A raced call of `policy` that answers at once.
async fn fast(policy: &'static RaceRetry) -> u32 {
    let answer: Result<u32, Rejected> = policy.run(|| async { Ok(1) }).await;
    answer.unwrap()
}

/// An `observe` whose future panics (in a task of this current-thread runtime, so on this thread)
/// leaves the thread as it found it: the 20,000 raced calls made next are not reported (nor kept
/// anywhere), and a later `observe` returns exactly its own attempts.
#[tokio::test(start_paused = true)]
async fn a_panic_inside_observe_leaves_the_thread_unobserved() {
    assert!(!reported_here().await);
    let task = tokio::spawn(observe(async {
        fast(&FAST_A).await;
        panic!("the observed future panics");
    }));
    let error = task.await.unwrap_err();
    assert!(error.is_panic());
    assert_eq!(message(error.into_panic()), "the observed future panics");

    assert!(!reported_here().await, "the thread is still observed");
    for _ in 0..20_000 {
        fast(&FAST_B).await;
    }
    assert!(!reported_here().await);
    let (_, attempts) = observe(fast(&FAST_C)).await;
    let names: Vec<_> = attempts.iter().map(|a| a.name).collect();
    assert_eq!(names, ["guarantees::c"]);
}

/// An `observe` inside another whose future panics (the panic caught in the outer one) gives the
/// outer one back its log: the outer `observe` sees the attempts before, inside and after it.
#[tokio::test(start_paused = true)]
async fn a_panic_inside_a_nested_observe_keeps_the_outer_log() {
    let (caught, attempts) = observe(async {
        fast(&FAST_A).await;
        let caught = catch(observe(async {
            fast(&FAST_B).await;
            panic!("the inner observed future panics");
        }))
        .await;
        fast(&FAST_C).await;
        caught
    })
    .await;
    assert_eq!(caught.unwrap_err(), "the inner observed future panics");
    let names: Vec<_> = attempts.iter().map(|a| a.name).collect();
    assert_eq!(names, ["guarantees::a", "guarantees::b", "guarantees::c"]);
    assert!(!reported_here().await);
}

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn midway(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// An `observe` dropped before its future ends (by an outer timeout) leaves the thread unobserved,
/// and the attempts its call abandons reach the `observe` around it.
#[tokio::test(start_paused = true)]
async fn an_observe_dropped_midway_leaves_the_thread_unobserved() {
    let script = Script::new(&[Hang, Hang]);
    let (result, attempts) = observe(timeout(ms(150), observe(midway(&script)))).await;
    assert!(result.is_err());
    assert_eq!(
        seen(&attempts),
        [step(1, "Abandoned", 0, 150), step(2, "Abandoned", 100, 50)]
    );
    assert_eq!(script.live(), 0);
    assert!(!reported_here().await);
}

// ---------------------------------------------------------------------------------------------
// A body that panics

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn panicky(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

static PANICKY_LEARNING: LazyLock<RaceRetry> = LazyLock::new(|| {
    built(
        "guarantees::panicky_learning",
        1,
        After::Percentile(0.5),
        ms(1000),
    )
    .build()
    .unwrap()
});

/// A body that panics ends the call with that panic: the other attempts are dropped with the call,
/// reported as abandoned, and the one that panicked as `Panicked`, whether it is attempt 1 in its
/// first poll, a later attempt while others run, or attempt 1 in a spawned task. The counters
/// count the attempts that started, the latency histogram records each reported attempt (with
/// the time it ran), and the fn's next call runs as usual.
#[tokio::test(start_paused = true)]
async fn a_body_that_panics_ends_the_call_and_drops_the_other_attempts() {
    panicky(&Script::new(&[Answer(0)])).await.unwrap();
    let before = stats("panicky");

    let script = Script::new(&[Hang, Panic(50)]);
    let (caught, attempts) = observe(catch(panicky(&script))).await;
    assert_eq!(caught.unwrap_err(), "attempt 2 panics");
    assert_eq!(
        seen(&attempts),
        [step(2, "Panicked", 100, 50), step(1, "Abandoned", 0, 150)]
    );
    assert_eq!((script.made(), script.live()), (2, 0));

    let script = Script::new(&[Hang, Hang, Panic(10)]);
    let (caught, attempts) = observe(catch(panicky(&script))).await;
    assert_eq!(caught.unwrap_err(), "attempt 3 panics");
    assert_eq!(
        seen(&attempts),
        [
            step(3, "Panicked", 200, 10),
            step(1, "Abandoned", 0, 210),
            step(2, "Abandoned", 100, 110),
        ]
    );
    assert_eq!((script.made(), script.live()), (3, 0));

    let script = Script::new(&[Panic(0)]);
    let (caught, attempts) = observe(catch(panicky(&script))).await;
    assert_eq!(caught.unwrap_err(), "attempt 1 panics");
    assert_eq!(seen(&attempts), [step(1, "Panicked", 0, 0)]);

    let script = Script::leaked(&[Hang, Panic(50)]);
    let error = tokio::spawn(panicky(script)).await.unwrap_err();
    assert_eq!(message(error.into_panic()), "attempt 2 panics");
    assert_eq!(script.live(), 0);

    assert_eq!(counted(before, stats("panicky")), (1 + 2 + 1, 0, 0, 0));
    assert_eq!(
        panicky(&Script::new(&[Fail(0), Answer(5)])).await.unwrap(),
        2
    );

    let samples = PANICKY_LEARNING.latency_samples();
    let script = Script::new(&[Hang, Panic(10)]);
    let caught = catch(PANICKY_LEARNING.run(|| script.attempt())).await;
    assert_eq!(caught.unwrap_err(), "attempt 2 panics");
    assert_eq!(PANICKY_LEARNING.latency_samples(), samples + 2);
    assert_eq!(script.live(), 0);
}

/// An argument whose copy for attempt `panics_at` panics (each attempt clones it).
struct Fragile<'a> {
    clones: &'a AtomicU32,
    panics_at: u32,
}

impl Clone for Fragile<'_> {
    fn clone(&self) -> Self {
        let n = self.clones.fetch_add(1, SeqCst) + 1;
        assert!(
            n != self.panics_at,
            "copying the argument for attempt {n} panics"
        );
        Fragile { ..*self }
    }
}

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn fragile(argument: Fragile<'_>, script: &Script) -> Result<u32, Error> {
    let _ = argument;
    script.attempt().await
}

/// A panic while an attempt is made (an owned argument's `clone` for it) is that attempt's: it is
/// reported as `Panicked`, the attempts running are dropped and reported as abandoned, and the
/// extra attempt counts as started.
#[tokio::test(start_paused = true)]
async fn a_panic_making_an_attempt_ends_the_call_like_a_body_that_panics() {
    let clones = AtomicU32::new(0);
    fragile(
        Fragile {
            clones: &clones,
            panics_at: 0,
        },
        &Script::new(&[Answer(0)]),
    )
    .await
    .unwrap();
    let before = stats("fragile");

    let clones = AtomicU32::new(0);
    let script = Script::new(&[Hang]);
    let argument = Fragile {
        clones: &clones,
        panics_at: 2,
    };
    let (caught, attempts) = observe(catch(fragile(argument, &script))).await;
    assert_eq!(
        caught.unwrap_err(),
        "copying the argument for attempt 2 panics"
    );
    assert_eq!(
        seen(&attempts),
        [step(2, "Panicked", 100, 0), step(1, "Abandoned", 0, 100)]
    );
    assert_eq!((script.made(), script.live()), (1, 0));
    assert_eq!(counted(before, stats("fragile")), (1, 0, 0, 0));

    let clones = AtomicU32::new(0);
    let script = Script::new(&[Answer(0)]);
    let argument = Fragile {
        clones: &clones,
        panics_at: 1,
    };
    let (caught, attempts) = observe(catch(fragile(argument, &script))).await;
    assert_eq!(
        caught.unwrap_err(),
        "copying the argument for attempt 1 panics"
    );
    assert_eq!(seen(&attempts), [step(1, "Panicked", 0, 0)]);
    assert_eq!(script.made(), 0);
}

// ---------------------------------------------------------------------------------------------
// `retry_if` that panics

/// Every error is worth another attempt but `Fatal`, on which it panics.
fn judge(error: &Error) -> bool {
    match error {
        Error::Fatal(n) => panic!("retry_if panics on attempt {n}'s error"),
        _ => true,
    }
}

#[race_retry(retries = 2, after = "100ms", total = "1s", backoff = "off", retry_if = judge)]
async fn judged(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// A `retry_if` that panics on an attempt's error ends the call with that panic, as if the
/// attempt had (`backoff = "off"`, for exact times): that attempt is reported as `Panicked`, the others still running are dropped and
/// reported as abandoned, and those that failed before are reported as failed.
#[tokio::test(start_paused = true)]
async fn a_retry_if_that_panics_ends_the_call_and_drops_the_other_attempts() {
    let script = Script::new(&[Hang, Fatal(50)]);
    let (caught, attempts) = observe(catch(judged(&script))).await;
    assert_eq!(caught.unwrap_err(), "retry_if panics on attempt 2's error");
    assert_eq!(
        seen(&attempts),
        [step(2, "Panicked", 100, 50), step(1, "Abandoned", 0, 150)]
    );
    assert_eq!(script.live(), 0);

    let script = Script::new(&[Fatal(0)]);
    let (caught, attempts) = observe(catch(judged(&script))).await;
    assert_eq!(caught.unwrap_err(), "retry_if panics on attempt 1's error");
    assert_eq!(seen(&attempts), [step(1, "Panicked", 0, 0)]);

    let script = Script::new(&[Fail(0), Fatal(0)]);
    let (caught, attempts) = observe(catch(judged(&script))).await;
    assert_eq!(caught.unwrap_err(), "retry_if panics on attempt 2's error");
    assert_eq!(
        seen(&attempts),
        [step(1, "Failed", 0, 0), step(2, "Panicked", 0, 0)]
    );
    assert_eq!(
        judged(&Script::new(&[Fail(0), Answer(0)])).await.unwrap(),
        2
    );
}

static JUDGED: LazyLock<RaceRetry> = LazyLock::new(|| {
    built("guarantees::judged", 2, After::Fixed(ms(100)), ms(1000))
        .build()
        .unwrap()
});

/// A raced call whose poll panicked is over: polling it again panics at once, without polling or
/// starting any attempt; dropping it drops its attempts. (The race itself, not an `async fn`
/// around it, which would refuse a second poll on its own.)
#[tokio::test(start_paused = true)]
async fn a_raced_call_polled_again_after_it_panicked_panics_at_once() {
    let script = Script::new(&[Hang, Fatal(50)]);
    let mut call = Box::pin(JUDGED.run_if(judge, || script.attempt()));
    let first = std::future::poll_fn(|cx| {
        match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => panic!("the call ended: {output:?}"),
            Err(panic) => Poll::Ready(message(panic)),
        }
    })
    .await;
    assert_eq!(first, "retry_if panics on attempt 2's error");
    let again = std::future::poll_fn(|cx| {
        Poll::Ready(catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx))))
    })
    .await;
    let again = again.map(|poll| poll.is_pending());
    assert_eq!(
        again.map_err(message),
        Err("a raced call was polled again after it panicked".to_string())
    );
    sleep(ms(500)).await;
    assert_eq!((script.made(), script.live()), (2, 1));
    drop(call);
    assert_eq!(script.live(), 0);
}

// ---------------------------------------------------------------------------------------------
// Destructors

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn destructors(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// An attempt whose destructor panics as the call cancels it ends the call with that panic: it is
/// reported as `Panicked`, and the attempts not yet dropped are dropped with the call and reported
/// as abandoned (when another attempt won, and at the deadline). A destructor that takes long
/// delays the call's return by as long, and changes nothing else.
#[tokio::test(start_paused = true)]
async fn an_attempt_whose_destructor_panics_or_takes_long() {
    destructors(&Script::new(&[Answer(0)])).await.unwrap();
    let before = stats("destructors");

    let script = Script::new(&[HangPanickingOnDrop, Hang, Answer(10)]);
    let (caught, attempts) = observe(catch(destructors(&script))).await;
    assert_eq!(caught.unwrap_err(), "an attempt's destructor panics");
    assert_eq!(
        seen(&attempts),
        [
            step(3, "Won", 200, 10),
            step(1, "Panicked", 0, 210),
            step(2, "Abandoned", 100, 110),
        ]
    );
    assert_eq!(script.live(), 0);
    assert_eq!(counted(before, stats("destructors")), (2, 1, 0, 0));

    let before = stats("destructors");
    let script = Script::new(&[HangPanickingOnDrop, Hang, Hang]);
    let (caught, attempts) = observe(catch(destructors(&script))).await;
    assert_eq!(caught.unwrap_err(), "an attempt's destructor panics");
    assert_eq!(
        seen(&attempts),
        [
            step(1, "Panicked", 0, 1000),
            step(2, "Abandoned", 100, 900),
            step(3, "Abandoned", 200, 800),
        ]
    );
    assert_eq!(script.live(), 0);
    assert_eq!(counted(before, stats("destructors")), (2, 0, 0, 1));

    let t0 = Instant::now();
    let wall = std::time::Instant::now();
    let script = Script::new(&[HangSlowDrop, Answer(10)]);
    let (answer, attempts) = observe(destructors(&script)).await;
    assert_eq!(answer.unwrap(), 2);
    assert!(wall.elapsed() >= ms(20));
    assert_eq!(t0.elapsed(), ms(110));
    assert_eq!(
        seen(&attempts),
        [step(2, "Won", 100, 10), step(1, "Lost", 0, 110)]
    );
    assert_eq!(script.live(), 0);
}

// ---------------------------------------------------------------------------------------------
// A call dropped by its caller

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn dropped(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// A call dropped before its first poll makes no attempt and counts nothing; one dropped while
/// one, two or three attempts run drops them all at once, reported as abandoned, and counts the
/// extra attempts it started; one dropped after it ended (here at the deadline) changes nothing.
#[tokio::test(start_paused = true)]
async fn a_call_dropped_at_any_point_drops_its_attempts_and_keeps_the_counts() {
    dropped(&Script::new(&[Answer(0)])).await.unwrap();

    let before = stats("dropped");
    let script = Script::new(&[]);
    drop(dropped(&script));
    assert_eq!(script.made(), 0);
    assert_eq!(counted(before, stats("dropped")), (0, 0, 0, 0));

    for (at, running) in [(50, 1), (150, 2), (250, 3)] {
        let before = stats("dropped");
        let script = Script::new(&[Hang, Hang, Hang]);
        let (result, attempts) = observe(timeout(ms(at), dropped(&script))).await;
        assert!(result.is_err());
        let expected: Vec<_> = (1..=running)
            .map(|n| {
                let started = u64::from(n - 1) * 100;
                step(n, "Abandoned", started, at - started)
            })
            .collect();
        assert_eq!(seen(&attempts), expected);
        assert_eq!((script.made(), script.live()), (running, 0));
        let extra = u64::from(running) - 1;
        assert_eq!(counted(before, stats("dropped")), (extra, 0, 0, 0));
    }

    let before = stats("dropped");
    let script = Script::new(&[Hang, Hang, Hang]);
    let mut call = Box::pin(dropped(&script));
    let error = call.as_mut().await.unwrap_err();
    assert!(
        matches!(&error, Error::Rejected(r) if r.is_deadline()),
        "{error:?}"
    );
    assert_eq!(script.live(), 0);
    drop(call);
    assert_eq!(counted(before, stats("dropped")), (2, 0, 0, 1));
}

// ---------------------------------------------------------------------------------------------
// The slots of `max_attempts_in_flight`

#[race_retry(
    retries = 2,
    after = "100ms",
    total = "1s",
    backoff = "off",
    max_attempts_in_flight = 1
)]
async fn capped(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

#[race_retry(
    retries = 1,
    after = "500ms",
    each = "100ms",
    total = "1s",
    backoff = "off",
    max_attempts_in_flight = 1
)]
async fn capped_each(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// The slots of `max_attempts_in_flight` are a call's own and go with its attempts: a call
/// dropped while its one attempt runs drops it, the attempt waiting for its slot never made; an
/// attempt that panics ends the call with its panic, on this task or a spawned one, the attempt
/// due after it never made; an attempt past `each` gives its slot back at once. The next call
/// runs its attempts one at a time from its first, as if none of that had happened.
#[tokio::test(start_paused = true)]
async fn a_capped_calls_slots_go_with_it_when_it_is_dropped_or_panics() {
    let script = Script::new(&[Hang, Hang]);
    let (result, attempts) = observe(timeout(ms(250), capped(&script))).await;
    assert!(result.is_err());
    assert_eq!(seen(&attempts), [step(1, "Abandoned", 0, 250)]);
    assert_eq!((script.made(), script.live()), (1, 0));

    let script = Script::new(&[Panic(150)]);
    let (caught, attempts) = observe(catch(capped(&script))).await;
    assert_eq!(caught.unwrap_err(), "attempt 1 panics");
    assert_eq!(seen(&attempts), [step(1, "Panicked", 0, 150)]);
    assert_eq!((script.made(), script.live()), (1, 0));

    let script = Script::leaked(&[Panic(150)]);
    let error = tokio::spawn(capped(script)).await.unwrap_err();
    assert_eq!(message(error.into_panic()), "attempt 1 panics");
    assert_eq!((script.made(), script.live()), (1, 0));

    let script = Script::new(&[Hang]);
    let (result, attempts) = observe(capped_each(&script)).await;
    assert!(result.unwrap_err().rejected().is_timeout());
    assert_eq!(
        seen(&attempts),
        [step(1, "TimedOut", 0, 100), step(2, "TimedOut", 100, 100)]
    );
    assert_eq!(script.live(), 0);

    let script = Script::new(&[Fail(50), Answer(10)]);
    let (result, attempts) = observe(capped(&script)).await;
    assert_eq!(result.unwrap(), 2);
    assert_eq!(
        seen(&attempts),
        [step(1, "Failed", 0, 50), step(2, "Won", 50, 10)]
    );
    assert_eq!((script.made(), script.live()), (2, 0));
}

// ---------------------------------------------------------------------------------------------
// No time driver

#[race_retry(retries = 2, after = "100ms", total = "1s", backoff = "off")]
async fn untimed(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn untimed_backoff(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// On a runtime without a time driver, calls that need no timer run (an attempt that answers at
/// once, a failure that starts the next at once with `backoff = "off"`); a call that has to wait
/// (for an attempt, or for a failure's backoff) panics with tokio's "timers are disabled", like
/// `tokio::time::timeout` there. Its attempts are dropped, the extra attempt it started counts,
/// and the thread is not left observed.
#[test]
fn without_a_time_driver_a_call_that_waits_panics_and_leaves_the_policy_consistent() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(untimed(&Script::new(&[Answer(0)])).await.unwrap(), 1);
        assert_eq!(
            untimed(&Script::new(&[Fail(0), Answer(0)])).await.unwrap(),
            2
        );
        let before = stats("untimed");

        let script = Script::leaked(&[Hang]);
        let error = tokio::spawn(observe(untimed(script))).await.unwrap_err();
        assert!(message(error.into_panic()).contains("timers are disabled"));
        assert_eq!((script.made(), script.live()), (1, 0));

        let script = Script::leaked(&[Fail(0), Hang]);
        let error = tokio::spawn(untimed(script)).await.unwrap_err();
        assert!(message(error.into_panic()).contains("timers are disabled"));
        assert_eq!((script.made(), script.live()), (2, 0));

        assert_eq!(counted(before, stats("untimed")), (1, 0, 0, 0));
        assert_eq!(untimed(&Script::new(&[Answer(0)])).await.unwrap(), 1);

        let script = Script::leaked(&[Fail(0), Answer(0)]);
        let error = tokio::spawn(untimed_backoff(script)).await.unwrap_err();
        assert!(message(error.into_panic()).contains("timers are disabled"));
        assert_eq!((script.made(), script.live()), (1, 0));
        assert_eq!(
            counted(RaceRetryStats::default(), stats("untimed_backoff")),
            (0, 0, 0, 0)
        );
    });
    drop(runtime);
    let paused = support::paused_runtime();
    assert!(
        !paused.block_on(reported_here()),
        "the thread is still observed"
    );
}

// ---------------------------------------------------------------------------------------------
// Extreme settings

/// A share below the rules' 0.001: only `__private::race_retry_unchecked` builds it.
static TINY_BUDGET: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(
        past_rules(
            "guarantees::tiny_budget",
            1,
            After::Fixed(ms(100)),
            Duration::from_secs(1),
        )
        .budget(0.0001)
        .no_backoff(),
    )
});

/// A budget share below 0.001 still bounds extra attempts: 100 calls at one instant whose first
/// attempt fails get the floor's first burst (10) and nothing more.
#[tokio::test(start_paused = true)]
async fn a_tiny_budget_share_still_bounds_extra_attempts() {
    for _ in 0..100 {
        let script = Script::new(&[Fail(0), Answer(0)]);
        let _: Result<u32, Error> = TINY_BUDGET.run(|| script.attempt()).await;
    }
    let stats = TINY_BUDGET.stats();
    assert_eq!(
        (stats.extra_attempts, stats.budget_refused),
        (10, 90),
        "{stats:?}"
    );
}

static MANY: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(
        past_rules(
            "guarantees::many",
            u32::MAX,
            After::Fixed(Duration::ZERO),
            ms(100),
        )
        .no_budget(),
    )
});
static EACH_ZERO: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(
        past_rules("guarantees::each_zero", 2, After::Fixed(ms(100)), ms(1000))
            .each(Duration::ZERO),
    )
});
static TOTAL_ZERO: LazyLock<RaceRetry> = LazyLock::new(|| {
    unchecked(past_rules(
        "guarantees::total_zero",
        2,
        After::Fixed(ms(100)),
        Duration::ZERO,
    ))
});
static QUANTILES: LazyLock<[RaceRetry; 7]> = LazyLock::new(|| {
    [
        past_rules(
            "guarantees::q_nan",
            1,
            After::Percentile(f64::NAN),
            ms(1000),
        ),
        past_rules(
            "guarantees::q_negative",
            1,
            After::Percentile(-1.0),
            ms(1000),
        ),
        past_rules("guarantees::q_zero", 1, After::Percentile(0.0), ms(1000)),
        past_rules("guarantees::q_one", 1, After::Percentile(1.0), ms(1000)),
        past_rules("guarantees::q_two", 1, After::Percentile(2.0), ms(1000)),
        past_rules(
            "guarantees::q_inf",
            1,
            After::Percentile(f64::INFINITY),
            ms(1000),
        ),
        past_rules(
            "guarantees::q_neg_inf",
            1,
            After::Percentile(f64::NEG_INFINITY),
            ms(1000),
        ),
    ]
    .map(unchecked)
});
static BACKOFFS: LazyLock<[RaceRetry; 9]> = LazyLock::new(|| {
    [
        backoff("guarantees::backoff_base_max").backoff(Duration::MAX),
        backoff("guarantees::backoff_base_zero").backoff(Duration::ZERO),
        backoff("guarantees::backoff_max_max").backoff_max(Duration::MAX),
        backoff("guarantees::backoff_max_zero").backoff_max(Duration::ZERO),
        backoff("guarantees::backoff_factor_nan").backoff_factor(f64::NAN),
        backoff("guarantees::backoff_factor_inf").backoff_factor(f64::INFINITY),
        backoff("guarantees::backoff_factor_neg_inf").backoff_factor(f64::NEG_INFINITY),
        backoff("guarantees::backoff_factor_below_one").backoff_factor(0.5),
        backoff("guarantees::backoff_all_max")
            .backoff(Duration::MAX)
            .backoff_factor(f64::MAX)
            .backoff_max(Duration::MAX),
    ]
    .map(unchecked)
});

/// A policy whose every attempt may fail, for the backoff settings: 16 retries, `total` 1 s, no
/// staggered start, no budget.
fn backoff(name: &'static str) -> RaceRetryBuilder {
    past_rules(name, MAX_RETRIES, After::Fixed(Duration::MAX), ms(1000)).no_budget()
}

static SHARES: LazyLock<[RaceRetry; 5]> = LazyLock::new(|| {
    [
        past_rules("guarantees::b_nan", 1, After::Fixed(ms(100)), ms(1000)).budget(f64::NAN),
        past_rules("guarantees::b_negative", 1, After::Fixed(ms(100)), ms(1000)).budget(-1.0),
        past_rules("guarantees::b_zero", 1, After::Fixed(ms(100)), ms(1000)).budget(0.0),
        past_rules("guarantees::b_tiny", 1, After::Fixed(ms(100)), ms(1000)).budget(1e-300),
        past_rules("guarantees::b_inf", 1, After::Fixed(ms(100)), ms(1000)).budget(f64::INFINITY),
    ]
    .map(unchecked)
});

/// Settings out of range neither panic nor size anything by their value: `retries = u32::MAX` is
/// 16 (17 attempts at most), `each` and `total` of zero end attempts and calls at their first
/// wait, any quantile (NaN, negative, above 1, infinite) learns a percentile within `total`, any
/// budget share (NaN, negative, zero, tiny, infinite) runs, and any backoff (a base or max of zero
/// or `Duration::MAX`, a factor that is NaN, infinite or below 1) waits within the deadline or
/// ends the call: with the last attempt's error (when no attempt is left, or the next backoff would
/// end past the deadline), or at the deadline.
#[tokio::test(start_paused = true)]
async fn extreme_settings_neither_panic_nor_allocate_by_their_value() {
    assert_eq!(MANY.retries(), MAX_RETRIES);
    let script = Script::new(&[Fail(0); 40]);
    let error: Error = MANY.run(|| script.attempt()).await.unwrap_err();
    assert!(matches!(error, Error::Attempt(17)), "{error:?}");
    assert_eq!(script.made(), MAX_RETRIES + 1);

    let script = Script::new(&[Answer(10); 3]);
    let error: Error = EACH_ZERO.run(|| script.attempt()).await.unwrap_err();
    assert!(
        matches!(&error, Error::Rejected(r) if r.is_timeout()),
        "{error:?}"
    );
    assert_eq!((script.made(), script.live()), (3, 0));

    let script = Script::new(&[Answer(10)]);
    let error: Error = TOTAL_ZERO.run(|| script.attempt()).await.unwrap_err();
    assert!(
        matches!(&error, Error::Rejected(r) if r.is_deadline()),
        "{error:?}"
    );
    let answer: Result<u32, Error> = TOTAL_ZERO.run(|| async { Ok(7) }).await;
    assert_eq!(answer.unwrap(), 7);

    for policy in QUANTILES.iter() {
        for i in 0..64 {
            let script = Script::new(&[Answer(1 + i % 7)]);
            let answer: Result<u32, Error> = policy.run(|| script.attempt()).await;
            assert_eq!(answer.unwrap(), 1);
        }
        assert!(policy.after() <= ms(1000), "{policy:?}");
        assert!(policy.latency_samples() >= 64, "{policy:?}");
    }

    for policy in BACKOFFS.iter() {
        assert!(
            policy.backoff_bound(u32::MAX) <= Duration::MAX,
            "{policy:?}"
        );
        let t0 = Instant::now();
        let script = Script::new(&[Fail(0); 40]);
        let error: Error = policy.run(|| script.attempt()).await.unwrap_err();
        let made = script.made();
        // (A wait that ends within the deadline's last millisecond fires with it, on the paused
        // clock's whole milliseconds: the deadline's refusal then.)
        assert!(
            matches!(&error, Error::Attempt(n) if *n == made)
                || matches!(&error, Error::Rejected(r) if r.is_deadline()),
            "{policy:?}: {error:?} after {made} attempts"
        );
        assert!(t0.elapsed() <= ms(1000), "{policy:?}: {:?}", t0.elapsed());
        assert_eq!(script.live(), 0);
    }

    for policy in SHARES.iter() {
        for _ in 0..20 {
            let script = Script::new(&[Fail(0), Answer(0)]);
            let _: Result<u32, Error> = policy.run(|| script.attempt()).await;
        }
        let stats = policy.stats();
        assert_eq!(
            stats.extra_attempts + stats.budget_refused,
            20,
            "{policy:?}"
        );
        assert!(stats.budget_balance.is_finite(), "{policy:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Tasks

/// A raced call spawns nothing: while three attempts race, the runtime has no task alive but the
/// test's own.
#[tokio::test(start_paused = true)]
async fn a_raced_call_spawns_no_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let alive = metrics.num_alive_tasks();
    let script = Script::new(&[Hang, Hang, Answer(100)]);
    let (answer, during) = tokio::join!(dropped(&script), async {
        sleep(ms(250)).await;
        metrics.num_alive_tasks()
    });
    assert_eq!(answer.unwrap(), 3);
    assert_eq!((during, metrics.num_alive_tasks()), (alive, alive));
}

#[race_retry(retries = 2, after = "20ms", total = "1s")]
async fn panicky_on_workers(script: &Script) -> Result<u32, Error> {
    script.attempt().await
}

/// The same on a multi-thread runtime, in real time: the call's task panics with attempt 2's
/// panic, attempt 1 is dropped with it, and the fn's next call (on another worker, maybe) runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_multi_thread_runtime_a_panicking_attempt_ends_the_call_and_drops_the_others() {
    let script = Script::leaked(&[Hang, Panic(5)]);
    let error = tokio::spawn(panicky_on_workers(script)).await.unwrap_err();
    assert_eq!(message(error.into_panic()), "attempt 2 panics");
    assert_eq!((script.made(), script.live()), (2, 0));
    let script = Script::leaked(&[Fail(0), Answer(1)]);
    let answer = tokio::spawn(panicky_on_workers(script)).await.unwrap();
    assert_eq!(answer.unwrap(), 2);
    assert_eq!(script.live(), 0);
}
