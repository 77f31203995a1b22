//! The "Guarantees" of `#[race_retry]` and `resilient::race`, through the facade: what holds when
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
use std::task::{Context, Poll};
use std::time::Duration;

use resilient::race::{observe, After, Attempt, RaceRetry};
use resilient::{race_retry, Rejected};
use tokio::time::{sleep, timeout, Instant};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The error of the raced fns.
#[derive(Debug)]
#[allow(dead_code)] // read by `Debug`
enum Error {
    /// Attempt `n` failed; another attempt may succeed.
    Attempt(u32),
    /// A policy refused.
    Rejected(Rejected),
}

impl From<Rejected> for Error {
    fn from(rejected: Rejected) -> Self {
        Error::Rejected(rejected)
    }
}

/// What attempt k of a call does. A wait of 0 ms means at once, without awaiting.
#[derive(Copy, Clone, Debug)]
enum Step {
    /// `Ok(k)` after this many ms.
    Answer(u64),
    /// `Err(Error::Attempt(k))` after this many ms.
    Fail(u64),
    /// Never ends.
    Hang,
}

use Step::{Answer, Fail, Hang};

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
            Hang => pending().await,
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

static PROBE: RaceRetry = RaceRetry::new(
    "guarantees::reported_here",
    1,
    After::Fixed(ms(150)),
    ms(1000),
);

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

static TOTAL_MAX: RaceRetry = RaceRetry::new(
    "guarantees::total_max",
    2,
    After::Fixed(ms(100)),
    Duration::MAX,
);
static TOTAL_MAX_LEARNED: RaceRetry = RaceRetry::new(
    "guarantees::total_max_learned",
    1,
    After::Percentile(0.95),
    Duration::MAX,
);

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

static AFTER_MAX: RaceRetry = RaceRetry::new(
    "guarantees::after_max",
    2,
    After::Fixed(Duration::MAX),
    ms(1000),
);

/// `after = Duration::MAX` starts no hedge: a hanging attempt 1 runs alone until the deadline; a
/// failed one still starts the next at once.
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

    let t0 = Instant::now();
    let script = Script::new(&[Fail(10), Answer(20)]);
    let answer: Result<u32, Error> = AFTER_MAX.run(|| script.attempt()).await;
    assert_eq!(answer.unwrap(), 2);
    assert_eq!(t0.elapsed(), ms(30));
}

static EACH_MAX: RaceRetry =
    RaceRetry::new("guarantees::each_max", 2, After::Fixed(ms(100)), ms(1000)).each(Duration::MAX);
static ALL_MAX: RaceRetry = RaceRetry::new(
    "guarantees::all_max",
    2,
    After::Fixed(Duration::MAX),
    Duration::MAX,
)
.each(Duration::MAX);

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

static FAST_A: RaceRetry = RaceRetry::new("guarantees::a", 1, After::Fixed(ms(100)), ms(1000));
static FAST_B: RaceRetry = RaceRetry::new("guarantees::b", 1, After::Fixed(ms(100)), ms(1000));
static FAST_C: RaceRetry = RaceRetry::new("guarantees::c", 1, After::Fixed(ms(100)), ms(1000));

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
