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

use std::future::pending;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use resilient::race::{After, RaceRetry};
use resilient::Rejected;
use tokio::time::{sleep, Instant};

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
