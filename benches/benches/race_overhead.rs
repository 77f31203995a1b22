//! The cost of `#[race_retry]` when the first attempt answers at once:
//! `cargo bench -p resilient-benches --bench race_overhead`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns
//! per call of one trivial `async fn` returning `Result<u64, E>` whose body never waits (so the
//! race's first attempt is ready at its first poll), called plainly, plainly with one read of
//! tokio's clock (`tokio::time::Instant::now()`: a reference, as a race reads the clock when it
//! starts, to show how much of the added cost is the clock), and under three forms of
//! `#[race_retry]`: a fixed `after` (`retries = 2, after = "150ms", total = "450ms"`, with the
//! default retry budget of 10%, so every call makes a deposit), the same with `budget = "off"`
//! (no deposit: the difference is what the default budget costs a call), and the default `after`
//! (`"p95"`, a percentile learned from the attempts' latencies, so calls record their attempt's
//! latency; default budget too). Each on 1 thread and on 2 OS threads calling the same fn (so
//! sharing its one `static` policy: its budget and its latency histogram). "added" is the raced
//! figure minus the plain one for the same thread count. Then the heap allocations per call, counted by this
//! binary's `#[global_allocator]` (a counter around `System`), and the size of each call's future.
//! The goal: under 100 ns added per call and no allocation.
//!
//! # How calls are driven
//!
//! As in `too_busy_cost.rs`: each call's future is polled to completion by [`block_on`], a tiny
//! loop on the calling thread, one fresh future per call, on plain OS threads pinned to their own
//! CPUs, with the stack shifted between rounds. Each worker thread builds a current-thread tokio
//! runtime (time driver on) and makes its calls inside that runtime's `block_on`, so the calls
//! run in a runtime's context as in a server (tokio's clock and timers are usable; a race whose
//! first attempt answers at once never makes a timer). The plain call runs in exactly the same
//! setting. After the measurements, `resilient::race::stats` is read to check that no call made an
//! extra attempt (every first attempt won at once).
//!
//! # How time is measured
//!
//! A sample runs a contender for a fixed time (`SAMPLE`) in chunks of `CHUNK` calls and divides
//! the time by the calls made; with 2 threads both start at a barrier and stop at one flag, and
//! the figure is the mean of the two threads' time per call. Samples are taken round-robin over
//! the contenders (`SAMPLES` rounds); the main table and the goal use medians, a second table the
//! best samples.
//!
//! `BENCH_PROFILE=<contender>` runs one contender alone, for `perf` or `valgrind`: see
//! [`profile`].
//!
//! # How allocations are counted
//!
//! On one thread, inside a current-thread runtime, after `CHUNK` warm-up calls (the first call of
//! a raced fn registers its name once, which allocates), `ALLOC_CALLS` calls are made and the
//! allocator's counter (every `alloc`, `alloc_zeroed` and `realloc`, from any thread; nothing else
//! runs meanwhile) is read before and after.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::Waker;
use std::time::{Duration, Instant};

use resilient::race_retry;

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
/// Calls between two looks at the stop flag.
const CHUNK: u64 = 4096;
/// Calls over which allocations are counted.
const ALLOC_CALLS: u64 = 100_000;
/// The goal: added ns per call, and allocations per call.
const GOAL_NS: f64 = 100.0;
const THREADS: [usize; 2] = [1, 2];

// ---------------------------------------------------------------------------------------------
// Counting allocations.

/// `System`, counting every allocation.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counter
// is a plain atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// The calls under test.

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn raced_fixed(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[race_retry(retries = 2, total = "450ms")]
async fn raced_p95(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", budget = "off")]
async fn raced_budget_off(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// The plain call plus one read of tokio's clock (what a race does at its first poll): a
/// reference for how much of the added cost is the clock.
async fn plain_clock(x: u64) -> Result<u64, CallError> {
    black_box(tokio::time::Instant::now());
    work(x)
}

/// A contender: its name, the suffix of its raced fn's name (for its stats; empty for the plain
/// call), and what makes `n` calls on this thread (with this thread's waker, made once).
type Contender = (&'static str, &'static str, fn(&Waker, u64));

/// The contenders, in table order; the first is the plain call the others are compared with,
/// the second a reference (not raced).
const CONTENDERS: [Contender; 5] = [
    ("plain `async fn`", "", |w, n| run(w, n, plain)),
    (
        "plain `async fn` + one `tokio::time::Instant::now()` (reference)",
        "",
        |w, n| run(w, n, plain_clock),
    ),
    (
        "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]` (default budget, 10%)",
        "::raced_fixed",
        |w, n| run(w, n, raced_fixed),
    ),
    (
        "`#[race_retry(retries = 2, total = \"450ms\")]` (after = \"p95\" and budget, the defaults)",
        "::raced_p95",
        |w, n| run(w, n, raced_p95),
    ),
    (
        "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\", budget = \"off\")]`",
        "::raced_budget_off",
        |w, n| run(w, n, raced_budget_off),
    ),
];

/// The contender with the default budget, and the same without: their difference is the
/// default budget's deposit.
const WITH_BUDGET: usize = 2;
const WITHOUT_BUDGET: usize = 4;

/// `n` calls of `call`, each polled to completion by [`block_on`].
#[inline(always)]
fn run<E, F: Future<Output = Result<u64, E>>>(waker: &Waker, n: u64, call: impl Fn(u64) -> F) {
    for i in 0..n {
        let _ = black_box(block_on(waker, call(black_box(i))));
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// ns per call of one sample of `contender` on `threads` threads; `round` picks the stack shift.
/// Also returns the calls made.
fn sample(contender: fn(&Waker, u64), threads: usize, round: usize) -> (f64, u64) {
    sample_threads(threads, round, SAMPLE, |timing| {
        current_thread_runtime().block_on(async {
            let waker = thread_waker();
            contender(&waker, CHUNK); // warm up
            timing.timed(CHUNK, || contender(&waker, CHUNK))
        })
    })
}

/// Allocations per call of `contender`, on this thread, inside a current-thread runtime.
fn allocations(contender: fn(&Waker, u64)) -> f64 {
    current_thread_runtime().block_on(async {
        let waker = thread_waker();
        contender(&waker, CHUNK); // warm up: the first call of a raced fn registers it
        let before = ALLOCATIONS.load(Relaxed);
        contender(&waker, ALLOC_CALLS);
        let after = ALLOCATIONS.load(Relaxed);
        (after - before) as f64 / ALLOC_CALLS as f64
    })
}

fn print_table(ns: &[[f64; 2]]) {
    outln!("| contender | 1 thread ns/call | added | 2 threads ns/call | added |");
    outln!("|---|---:|---:|---:|---:|");
    for (c, &(name, _, _)) in CONTENDERS.iter().enumerate() {
        let added = |t: usize| {
            if c == 0 {
                "—".to_string()
            } else {
                format!("{:+.1}", ns[c][t] - ns[0][t])
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

/// The stats of the raced fn whose name ends with `suffix`.
fn stats_of(suffix: &str) -> Option<resilient::race::RaceStats> {
    let name = resilient::race::names()
        .into_iter()
        .find(|name| name.ends_with(suffix))?;
    resilient::race::stats(name)
}

fn measure() {
    let Rounds {
        medians,
        best,
        fewest_calls,
    } = rounds(CONTENDERS.len(), SAMPLES, |c, threads, round| {
        sample(CONTENDERS[c].2, threads, round)
    });
    let allocs: Vec<f64> = CONTENDERS.iter().map(|c| allocations(c.2)).collect();

    outln!("## Added cost of a race whose first attempt answers at once\n");
    outln!(
        "ns per call, median of {SAMPLES} samples of {} ms each (every sample made at least {} \
         calls); \"added\" = contender minus the plain call. Calls run inside a current-thread \
         tokio runtime per thread; 2 threads = 2 OS threads calling the same fn (one shared \
         static policy), time per call as each thread sees it.\n",
        SAMPLE.as_millis(),
        group(fewest_calls),
    );
    print_table(&medians);
    outln!("\nBest of the same samples:\n");
    print_table(&best);
    outln!(
        "\nThe default budget's deposit (the fixed `after` with the default budget minus the same \
         with `budget = \"off\"`), ns per call:\n"
    );
    outln!("| | 1 thread | 2 threads |");
    outln!("|---|---:|---:|");
    for (label, figures) in [("medians", &medians), ("best", &best)] {
        outln!(
            "| {label} | {:+.1} | {:+.1} |",
            figures[WITH_BUDGET][0] - figures[WITHOUT_BUDGET][0],
            figures[WITH_BUDGET][1] - figures[WITHOUT_BUDGET][1]
        );
    }

    outln!(
        "\n## Allocations and sizes\n\nHeap allocations per call over {} calls on 1 thread \
         (after {} warm-up calls), and the size of the call's future before its first poll.\n",
        group(ALLOC_CALLS),
        group(CHUNK)
    );
    let sizes = [
        std::mem::size_of_val(&plain(0)),
        std::mem::size_of_val(&plain_clock(0)),
        std::mem::size_of_val(&raced_fixed(0)),
        std::mem::size_of_val(&raced_p95(0)),
        std::mem::size_of_val(&raced_budget_off(0)),
    ];
    outln!("| contender | allocations per call | future size |");
    outln!("|---|---:|---:|");
    for (c, &(name, _, _)) in CONTENDERS.iter().enumerate() {
        outln!("| {name} | {} | {} B |", allocs[c], sizes[c]);
    }
    outln!(
        "\nOutput `Result<u64, CallError>`: {} B.",
        std::mem::size_of::<Result<u64, CallError>>()
    );

    outln!(
        "\nCheck, from `resilient::race::stats` after every call above (warm-ups, samples, \
         allocation counts):\n"
    );
    outln!("| raced fn | extra attempts | won by extra | deadlines | `after` now | latency samples recorded |");
    outln!("|---|---:|---:|---:|---:|---:|");
    for &(name, suffix, _) in CONTENDERS.iter().filter(|c| !c.1.is_empty()) {
        match stats_of(suffix) {
            Some(s) => outln!(
                "| {name} | {} | {} | {} | {:?} | {} |",
                s.extra_attempts,
                s.won_by_extra,
                s.deadlines,
                s.after,
                if suffix == "::raced_p95" {
                    "yes (`after = \"p95\"`)"
                } else {
                    "no (fixed `after`)"
                }
            ),
            None => outln!("| {name} | not registered | | | | |"),
        }
    }
    outln!();

    outln!(
        "### Goal: a race whose first attempt answers at once adds under {GOAL_NS} ns per call \
         (medians) and allocates nothing\n"
    );
    outln!("| contender | threads | added | allocations per call | goal | result |");
    outln!("|---|---:|---:|---:|---|---|");
    for (c, &(name, _, _)) in CONTENDERS
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.1.is_empty())
    {
        for (t, &threads) in THREADS.iter().enumerate() {
            let added = medians[c][t] - medians[0][t];
            let ok = added < GOAL_NS && allocs[c] == 0.0;
            outln!(
                "| {name} | {threads} | {added:+.1} ns | {} | < {GOAL_NS} ns, 0 | {} |",
                allocs[c],
                if ok { "PASS" } else { "MISS" }
            );
        }
    }
    outln!();
}

/// `BENCH_PROFILE=<contender number>` (0 = plain, 1 = plain with a clock read, 2 = fixed
/// `after`, 3 = `after = "p95"`, 4 = fixed `after` with `budget = "off"`) runs just that contender
/// for `BENCH_CALLS` calls (default 10M, rounded up to whole chunks) on each of `BENCH_THREADS`
/// threads (default 1), in the same setting as the measurement, and prints one line: a target for
/// `perf` or `valgrind --tool=callgrind`.
fn profile(which: &str) {
    let (name, _, contender) = CONTENDERS[which
        .parse::<usize>()
        .expect("BENCH_PROFILE is a contender number")];
    profile_calls(name, CHUNK, |calls| {
        current_thread_runtime().block_on(async {
            let waker = thread_waker();
            contender(&waker, calls);
        })
    });
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&which);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resilient `#[race_retry]` overhead benchmark\n");
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
    common::publish("race_overhead");
}
