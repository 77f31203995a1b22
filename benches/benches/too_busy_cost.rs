//! The cost of the `#[too_busy]` check: `cargo bench -p resilient-benches --bench too_busy_cost`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns
//! per call of one trivial `async fn` returning `Result<u64, E>` called plainly and under
//! `#[too_busy]` (defaults: the runtime's lag, `max_lag` 70 ms), `#[too_busy(max_in_flight = 1024)]`,
//! `#[too_busy(max_latency = "200ms")]` and `#[too_busy(max_in_flight = "auto")]` (started and
//! capped at 1024, so it admits every call, and pays for learning: a clock read at each end of a
//! call and the window's counters), on 1 thread and on 2 OS threads calling the same fn
//! (so sharing its one static guard). "added" is the guarded figure minus the plain one for the
//! same thread count; the goal is an added cost under 5 ns for the default attribute. The plain
//! and default calls are repeated with a pointer-sized error type (`Box<dyn Error>`), whose
//! `Result` comes back in registers: the difference between the two "added" figures is the cost
//! of moving a larger output (here 56 B, a `Rejected` held inline) through one more future, not
//! of the check itself.
//!
//! # How calls are driven
//!
//! As in the breaker benchmark (`benches/breaker.rs`): each call's future is polled to completion
//! by [`block_on`], a tiny loop on the calling thread, one fresh future per call, on plain OS
//! threads pinned to their own CPUs, with the stack shifted between rounds.
//!
//! One difference: the lag signal needs a tokio runtime. The guard reads the lag that the
//! runtime's monitor keeps, and starts that monitor on the caller's runtime the first time; with no
//! runtime there is no monitor, and every call would try (and fail) to start one, which is not the
//! path a server takes. So each worker thread builds a current-thread runtime (time driver on)
//! and runs its calls inside that runtime's `block_on`: the runtime's context is entered, the
//! first guarded call starts the monitor on it, and between two chunks of calls the worker yields
//! to the runtime (`tokio::task::yield_now`), so the monitor's timer fires and it samples the lag
//! every 100 ms as in a server. Every call inside a chunk still goes through the tiny
//! [`block_on`], so a call's figure holds the future's construction, one poll and the guard, and
//! nothing of the scheduler. The plain call runs in exactly the same setting (runtime, yields),
//! so the scheduler's share (one yield per `CHUNK` calls) cancels out of "added". The number of
//! lag samples the monitors took while calls were measured is printed, as a check that the
//! signal was live.
//!
//! # How time is measured
//!
//! A sample runs a contender for a fixed time (`SAMPLE`) in chunks of `CHUNK` calls and divides
//! the time by the calls made; with 2 threads both start at a barrier and stop at one flag, and
//! the figure is the mean of the two threads' time per call. Samples are taken round-robin over
//! the contenders (`SAMPLES` rounds); the main table and the goal use medians, a second table the
//! best samples.
//!
//! `BENCH_PROFILE=<contender>` runs one contender alone, for `valgrind --tool=callgrind`: see
//! [`profile`].

use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use resilient::too_busy;

mod common;
use common::outln;
use common::{
    block_on, current_thread_runtime, group, load_average, plain, profile_calls, rounds,
    sample_threads, thread_waker, work, CallError, Rounds,
};

/// How long one sample runs each contender.
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the best and the median are reported.
const SAMPLES: usize = 9;
/// Calls between two looks at the stop flag (and two yields to the runtime).
const CHUNK: u64 = 4096;
/// The goal: added ns per call of the default `#[too_busy]`.
const GOAL_NS: f64 = 5.0;
const THREADS: [usize; 2] = [1, 2];

// ---------------------------------------------------------------------------------------------
// The call under test.

#[too_busy]
async fn busy_default(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy(max_in_flight = 1024)]
async fn busy_in_flight(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy(max_in_flight = "auto", auto_initial = 1024, auto_max = 1024)]
async fn busy_auto(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy(max_latency = "200ms")]
async fn busy_latency(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// A pointer-sized error: `Result<u64, BoxError>` is 16 B and comes back in registers, where
/// `Result<u64, CallError>` (which holds a `Rejected` inline) is 56 B and goes through memory.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn plain_boxed(x: u64) -> Result<u64, BoxError> {
    work(x).map_err(|_| "down".into())
}

#[too_busy]
async fn busy_default_boxed(x: u64) -> Result<u64, BoxError> {
    work(x).map_err(|_| "down".into())
}

/// A contender: its name, what makes `n` calls, and the index of the plain call it is compared
/// with (itself for a plain call).
type Contender = (&'static str, fn(u64), usize);

/// The contenders, in table order. The goal compares 1 with 0; 4 and 5 repeat 0 and 1 with a
/// pointer-sized error type, to separate the guard's own cost from the cost of moving a larger
/// output through one more future.
const CONTENDERS: [Contender; 7] = [
    ("plain `async fn`", |n| run(n, plain), 0),
    (
        "`#[too_busy]` (defaults: lag, max_lag 70 ms)",
        |n| run(n, busy_default),
        0,
    ),
    (
        "`#[too_busy(max_in_flight = 1024)]`",
        |n| run(n, busy_in_flight),
        0,
    ),
    (
        "`#[too_busy(max_latency = \"200ms\")]`",
        |n| run(n, busy_latency),
        0,
    ),
    (
        "plain `async fn`, `Box<dyn Error>` error",
        |n| run(n, plain_boxed),
        4,
    ),
    (
        "`#[too_busy]` (defaults), `Box<dyn Error>` error",
        |n| run(n, busy_default_boxed),
        4,
    ),
    (
        "`#[too_busy(max_in_flight = \"auto\")]` (from 1024)",
        |n| run(n, busy_auto),
        0,
    ),
];

/// `n` calls of `call`, each polled to completion by [`block_on`].
#[inline(always)]
fn run<E, F: Future<Output = Result<u64, E>>>(n: u64, call: impl Fn(u64) -> F) {
    let waker = thread_waker();
    for i in 0..n {
        let _ = black_box(block_on(&waker, call(black_box(i))));
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// Lag samples taken by all monitors so far (counted by an `on_lag` callback at threshold 0).
static LAG_SAMPLES: AtomicU64 = AtomicU64::new(0);

/// ns per call of one sample of `contender` on `threads` threads; `round` picks the stack shift.
/// Also returns the calls made.
fn sample(contender: fn(u64), threads: usize, round: usize) -> (f64, u64) {
    sample_threads(threads, round, SAMPLE, |timing| {
        current_thread_runtime().block_on(async {
            contender(CHUNK); // warm up; starts this runtime's monitor
            tokio::task::yield_now().await;
            timing
                .timed_async(CHUNK, || async {
                    contender(CHUNK);
                    tokio::task::yield_now().await; // the monitor's timer may fire
                })
                .await
        })
    })
}

fn print_table(ns: &[[f64; 2]]) {
    outln!("| contender | 1 thread ns/call | added | 2 threads ns/call | added |");
    outln!("|---|---:|---:|---:|---:|");
    for (c, &(name, _, base)) in CONTENDERS.iter().enumerate() {
        let added = |t: usize| {
            if c == base {
                "—".to_string()
            } else {
                format!("{:+.1}", ns[c][t] - ns[base][t])
            }
        };
        outln!(
            "| {name} | {:.1} | {} | {:.1} | {} |",
            ns[c][0],
            added(0),
            ns[c][1],
            added(1)
        );
    }
}

fn measure() {
    let mut guarded_runtimes = 0;
    let lag_samples_before = LAG_SAMPLES.load(Relaxed);
    let Rounds {
        medians,
        best,
        fewest_calls,
    } = rounds(CONTENDERS.len(), SAMPLES, |c, threads, round| {
        let (_, contender, base) = CONTENDERS[c];
        if c != base {
            guarded_runtimes += threads;
        }
        sample(contender, threads, round)
    });
    let lag_samples = LAG_SAMPLES.load(Relaxed) - lag_samples_before;

    outln!("## Added cost of the check\n");
    outln!(
        "ns per call, median of {SAMPLES} samples of {} ms each (every sample made at least {} \
         calls); \"added\" = contender minus the plain call. Calls run inside a current-thread \
         tokio runtime per thread (its lag monitor live); 2 threads = 2 OS threads calling the \
         same fn (one shared static guard), time per call as each thread sees it.\n",
        SAMPLE.as_millis(),
        group(fewest_calls),
    );
    print_table(&medians);
    outln!("\nBest of the same samples:\n");
    print_table(&best);
    let expected = guarded_runtimes as u128 * SAMPLE.as_millis()
        / resilient::busy::interval().as_millis().max(1);
    outln!(
        "\nLag monitors took {lag_samples} samples during the guarded measurements (about \
         {expected} if on time: {guarded_runtimes} guarded runtimes, each living about {} ms, a \
         monitor sampling every {} ms), so the lag signal was live.\n",
        SAMPLE.as_millis(),
        resilient::busy::interval().as_millis()
    );
    outln!(
        "Size of the call's future before its first poll: plain {} B, `#[too_busy]` {} B, \
         with max_in_flight {} B, with max_latency {} B. Size of the output: `Result<u64, \
         CallError>` {} B, `Result<u64, Box<dyn Error>>` {} B.\n",
        std::mem::size_of_val(&plain(0)),
        std::mem::size_of_val(&busy_default(0)),
        std::mem::size_of_val(&busy_in_flight(0)),
        std::mem::size_of_val(&busy_latency(0)),
        std::mem::size_of::<Result<u64, CallError>>(),
        std::mem::size_of::<Result<u64, BoxError>>(),
    );

    outln!("### Goal: `#[too_busy]` (defaults) adds under {GOAL_NS} ns per call (medians)\n");
    outln!("| threads | added | goal | result |");
    outln!("|---:|---:|---:|---|");
    for (t, &threads) in THREADS.iter().enumerate() {
        let added = medians[1][t] - medians[0][t];
        outln!(
            "| {threads} | {added:+.1} | < {GOAL_NS} | {} |",
            if added < GOAL_NS { "PASS" } else { "MISS" }
        );
    }
    outln!();
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=<contender number>` (0 = plain, 1 = defaults, 2 = max_in_flight,
/// 3 = max_latency, 4 = plain with a boxed error, 5 = defaults with a boxed error, 6 =
/// max_in_flight = "auto") runs just that contender for `BENCH_CALLS` calls (default 10M, rounded up to
/// whole chunks) on each of `BENCH_THREADS` threads (default 1), in the same setting as the
/// measurement (a current-thread runtime per thread, a yield per chunk), and prints one line:
/// a target for `valgrind --tool=callgrind` or `perf`.
fn profile(which: &str) {
    let (name, contender, _) = CONTENDERS[which
        .parse::<usize>()
        .expect("BENCH_PROFILE is a contender number")];
    profile_calls(name, CHUNK, |calls| {
        current_thread_runtime().block_on(async {
            for _ in 0..calls / CHUNK {
                contender(CHUNK);
                tokio::task::yield_now().await;
            }
        })
    });
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&which);
    }
    resilient::busy::on_lag(Duration::ZERO, |_| {
        LAG_SAMPLES.fetch_add(1, Relaxed);
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resilient `#[too_busy]` cost benchmark\n");
    outln!(
        "{cores} cores available; load average at start: {}.\n",
        load_average()
    );
    let started = Instant::now();
    measure();
    outln!(
        "Whole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish("too_busy_cost");
}
