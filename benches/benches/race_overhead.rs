//! The cost of `#[race_retry]` when the first attempt answers at once:
//! `cargo bench -p resiliency-benches --bench race_overhead`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns per
//! call and the instructions per call of one trivial `async fn` returning `Result<u64, E>` whose
//! body never waits (so the race's first attempt is ready at its first poll), called plainly,
//! plainly with one read of tokio's clock (`tokio::time::Instant::now()`: a reference, as a race
//! reads the clock when it starts, to show how much of the added cost is the clock), and under
//! three forms of `#[race_retry]`: a fixed `after` (`retries = 2, after = "150ms", total =
//! "450ms"`, with the default retry budget of 10%, so every call makes a deposit), the same with
//! `budget = "off"` (no deposit: the difference is what the default budget costs a call), and the
//! default `after` (`"p95"`, a percentile learned from the attempts' latencies, so calls record
//! their attempt's latency; default budget too); and the peer, tower's `Hedge` (built as in
//! `race_tail.rs`: every request may be hedged, after the p95 of the last full period of 1 s, with
//! at least 32 data points) around a `tower::service_fn` over the same work, called as tower
//! services are (`ready()`, then `call(i)`). A new hedge has no history and hedges nothing until
//! a full period of calls has passed; each one here starts from the history that one period of
//! this workload leaves it, 100 latencies of 1 ms (tower records whole milliseconds, rounded up:
//! a call that answers at once counts 1 ms), with `Hedge::new_with_mock_latencies`, so it sets up
//! a hedged attempt after 1 ms on every call, as a hedge in service does (a check run counts the
//! clones of its inner service it makes for them). The history it rotates in every period holds
//! the same latencies, so its cost per call does not depend on how long a run lasts (callgrind
//! runs last seconds). Each contender runs on both drivers (below), on 1 thread and on 2 OS threads
//! calling the same fn (so sharing its one `static` policy: its budget and its latency
//! histogram); `Hedge` is not `Clone`, so each thread has its own (sharing one would take a lock
//! or a `Buffer`, which tower's figure would then include). "added" is a contender's figure minus
//! its baseline's on the same driver and thread count: the plain `async fn` for ours, and for
//! tower's hedge the same work as a plain `service_fn` called the same way. Then the heap
//! allocations per call on each driver, counted by this binary's `#[global_allocator]` (a counter
//! around `System`), and the size of each call's future.
//!
//! The goals: each raced fn adds under 100 ns per call on the worst driver, on 1 and 2 threads,
//! and allocates nothing; the fixed `after` adds at most 150 instructions per call on each
//! driver, and fewer than tower's hedge adds to its plain service.
//!
//! # How calls are driven
//!
//! As in the breaker benchmark (`benches/breaker.rs`, `common::drive`): each call's future is made
//! in place (`pin!(make(i))`) and never moved, and polled to completion on the calling thread by
//! one of two drivers: `inlined`, an `#[inline(always)]` loop, or `polled`, one
//! `#[inline(never)] poll_in_place(Pin<&mut F>, &mut Context)`, as an executor polls a task. No
//! future is passed by value to a function that is not inlined, for any contender (such a copy,
//! right after the future was written, stalls on store forwarding, and a race's future is
//! large). A tower service's call is two futures, `ready()` and `call(i)`, each made in place and
//! driven so. Workers are plain OS threads pinned to their own CPUs, with the stack shifted
//! between rounds; each builds a current-thread tokio runtime (time driver on) and makes its
//! calls inside that runtime's `block_on`, so the calls run in a runtime's context as in a server
//! (tokio's clock and timers are usable; a race whose first attempt answers at once never makes
//! a timer, tower's hedge makes one per call and drops it unpolled). Every contender runs in
//! exactly the same setting. After the measurements, `resiliency::race_retry::stats` is read to check
//! that no call made an extra attempt (every first attempt won at once).
//!
//! # How time is measured
//!
//! A sample runs a contender on one driver for a fixed time (`SAMPLE`) in chunks of `CHUNK` calls
//! and divides the time by the calls made; with 2 threads both start at a barrier and stop at one
//! flag, and the figure is the mean of the two threads' time per call. Samples are taken
//! round-robin over the contenders, drivers and thread counts (`SAMPLES` rounds,
//! `common::rounds`); the main table and the goals use medians, a second table the best samples.
//!
//! # How instructions are counted
//!
//! As in the breaker benchmark (`common::callgrind`): when `valgrind` is on the `PATH`, the
//! benchmark runs its own executable under `valgrind --tool=callgrind` in the `BENCH_PROFILE`
//! mode (one contender, one driver, 1 thread, the measurement's setting) for N
//! (`CALLGRIND_CALLS`) and 2N calls, one run after another, and reports `(I(2N) - I(N)) / N`;
//! without valgrind it says so and installs nothing.
//!
//! # How allocations are counted
//!
//! On one thread, inside a current-thread runtime, with each driver, after `CHUNK` warm-up calls
//! (the first call of a raced fn registers its name once, which allocates), `ALLOC_CALLS` calls
//! are made and the allocator's counter (every `alloc`, `alloc_zeroed` and `realloc`, from any
//! thread; nothing else runs meanwhile) is read before and after.
//!
//! `BENCH_QUICK=1` makes a quick run for development (3 samples of 50 ms, N = 20,000) and
//! publishes nothing. `BENCH_PROFILE=<contender>` runs one contender alone, for `perf` or
//! `valgrind`: see [`profile`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use resiliency::race_retry;
use tower::Service;

mod common;
use common::cost::{
    added, in_chunks, measure, or_dash, print_table, Contender, Figures, Instructions, Plan, Role,
};
use common::drive::{service_calls, Driver};
use common::outln;
use common::{crate_version, HedgeAll};
use common::{
    current_thread_runtime, group, load_average, pass, plain, plain_boxed, sample_threads,
    thread_waker, work, BoxError, CallError,
};

/// How long one sample runs each contender (`BENCH_QUICK`: 50 ms).
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the best and the median are reported (`BENCH_QUICK`: 3).
const SAMPLES: usize = 9;
/// N of the instruction counts: callgrind runs each contender for N and 2N calls per driver
/// (`BENCH_QUICK`: 20,000).
const CALLGRIND_CALLS: u64 = 200_000;
/// Calls between two looks at the stop flag.
const CHUNK: u64 = 4096;
/// Calls over which allocations are counted.
const ALLOC_CALLS: u64 = 100_000;
/// The goals: added ns per call (and no allocation), and added instructions per call of the
/// fixed `after` on each driver.
const GOAL_NS: f64 = 100.0;
const GOAL_INSTRUCTIONS: f64 = 150.0;
/// Tower's hedge: its minimum of data points, its percentile, its histogram's period (as in
/// race_tail), and the history it starts from: what one period of these calls records (tower
/// rounds latencies up to whole milliseconds, so a call that answers at once counts 1 ms).
const HEDGE_MIN_POINTS: u64 = 32;
const HEDGE_PERCENTILE: f32 = 0.95;
const HEDGE_PERIOD: Duration = Duration::from_secs(1);
const HEDGE_HISTORY: [u64; 100] = [1; 100];

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

/// Tower's hedge around `service`, its history prefilled (`HEDGE_HISTORY`): from its first call
/// it clones every request and sets up the hedged attempt behind a timer (1 ms, its p95), as a
/// hedge with a full period of history does.
fn hedge<S>(service: S) -> tower::hedge::Hedge<S, HedgeAll>
where
    S: Service<u64, Response = u64> + Clone,
    S::Error: Into<BoxError>,
{
    tower::hedge::Hedge::new_with_mock_latencies(
        service,
        HedgeAll,
        HEDGE_MIN_POINTS,
        HEDGE_PERCENTILE,
        HEDGE_PERIOD,
        &HEDGE_HISTORY,
    )
}

/// A service that counts its clones: tower's hedge clones its inner service once for each call
/// whose hedged attempt it sets up.
#[derive(Debug)]
struct CountClones<S>(S);

static CLONES: AtomicU64 = AtomicU64::new(0);

impl<S: Clone> Clone for CountClones<S> {
    fn clone(&self) -> Self {
        CLONES.fetch_add(1, Relaxed);
        CountClones(self.0.clone())
    }
}

impl<S: Service<u64>> Service<u64> for CountClones<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: u64) -> S::Future {
        self.0.call(request)
    }
}

// ---------------------------------------------------------------------------------------------
// Contenders, in table order (their numbers are `BENCH_PROFILE`'s).

const PLAIN: usize = 0;
const FIXED: usize = 2;
const WITHOUT_BUDGET: usize = 4;
const SERVICE_FN: usize = 5;
const HEDGE: usize = 6;

/// Our raced contenders and the suffix of their fn's name (for their stats).
const RACED: [(usize, &str); 3] = [
    (FIXED, "::raced_fixed"),
    (3, "::raced_p95"),
    (WITHOUT_BUDGET, "::raced_budget_off"),
];

fn contenders(lock: &str) -> Vec<Contender> {
    vec![
        Contender::calls("plain `async fn`", Role::Baseline, PLAIN, (), |_, i| {
            plain(i)
        }),
        Contender::calls(
            "plain `async fn` + one `tokio::time::Instant::now()` (reference)",
            Role::Reference,
            PLAIN,
            (),
            |_, i| plain_clock(i),
        ),
        Contender::calls(
            "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]` (default budget, 10%)",
            Role::Ours,
            PLAIN,
            (),
            |_, i| raced_fixed(i),
        ),
        Contender::calls(
            "`#[race_retry(retries = 2, total = \"450ms\")]` (after = \"p95\" and budget, the defaults)",
            Role::Ours,
            PLAIN,
            (),
            |_, i| raced_p95(i),
        ),
        Contender::calls(
            "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\", budget = \"off\")]`",
            Role::Ours,
            PLAIN,
            (),
            |_, i| raced_budget_off(i),
        ),
        Contender::plain_service(SERVICE_FN),
        Contender::requests(
            format!(
                "tower {} `Hedge` (p95, {HEDGE_MIN_POINTS} points, period \
                 {} s), one per thread",
                crate_version(lock, "tower"),
                HEDGE_PERIOD.as_secs()
            ),
            Role::Peer,
            SERVICE_FN,
            || hedge(tower::service_fn(plain_boxed)),
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// ns per call of one sample of `contender` on `driver` and `threads` threads; `round` picks the
/// stack shift. Also returns the calls made.
fn sample(
    contender: &Contender,
    driver: Driver,
    threads: usize,
    round: usize,
    length: Duration,
) -> (f64, u64) {
    sample_threads(threads, round, length, |timing| {
        current_thread_runtime().block_on(async {
            let mut run = (contender.make)();
            run(driver, CHUNK); // warm up
            timing.timed(CHUNK, || run(driver, CHUNK))
        })
    })
}

/// Allocations per call of `contender` on `driver`, on this thread, inside a current-thread
/// runtime.
fn allocations(contender: &Contender, driver: Driver) -> f64 {
    current_thread_runtime().block_on(async {
        let mut run = (contender.make)();
        run(driver, CHUNK); // warm up: the first call of a raced fn registers it
        let before = ALLOCATIONS.load(Relaxed);
        run(driver, ALLOC_CALLS);
        let after = ALLOCATIONS.load(Relaxed);
        (after - before) as f64 / ALLOC_CALLS as f64
    })
}

/// Clones of the inner service that a hedge built as the measured one makes over `calls` calls
/// (after one warm-up call): one per call whose hedged attempt it set up.
fn hedged_attempts(calls: u64) -> u64 {
    current_thread_runtime().block_on(async {
        let mut hedge = hedge(CountClones(tower::service_fn(plain_boxed)));
        let waker = thread_waker();
        service_calls(Driver::Inlined, &waker, 1, &mut hedge);
        let before = CLONES.load(Relaxed);
        service_calls(Driver::Inlined, &waker, calls, &mut hedge);
        CLONES.load(Relaxed) - before
    })
}

/// The stats of the raced fn whose name ends with `suffix`.
fn stats_of(suffix: &str) -> Option<resiliency::race_retry::RaceRetryStats> {
    let name = resiliency::race_retry::names()
        .into_iter()
        .find(|name| name.ends_with(suffix))?;
    resiliency::race_retry::stats(name)
}

fn measure_all(lock: &str, plan: &Plan) {
    let all = contenders(lock);
    let Figures {
        medians,
        best,
        fewest_calls,
    } = measure(&all, plan.samples, |contender, driver, threads, round| {
        sample(contender, driver, threads, round, plan.sample)
    });
    // [contender][driver]
    let allocs: Vec<[f64; 2]> = all
        .iter()
        .map(|c| Driver::ALL.map(|driver| allocations(c, driver)))
        .collect();
    let hedged = hedged_attempts(ALLOC_CALLS);
    let instructions = Instructions::count(&all, plan.callgrind_calls);

    outln!("## Added cost of a race whose first attempt answers at once\n");
    outln!(
        "ns per call, median of {} samples of {} ms each (every sample made at least {} calls), \
         with each driver (`inlined`: the future polled in an inlined loop; `polled`: through a \
         non-inlined `poll_in_place(Pin<&mut F>)`, as an executor polls a task; both make the \
         future in place and never copy it) on 1 thread and on 2 OS threads calling the same fn \
         (one shared static policy; tower's `Hedge` is not `Clone`: one per thread), time per \
         call as each thread sees it. Calls run inside a current-thread tokio runtime per thread. \
         In parentheses, \"added\": the contender minus the baseline named in \"added vs\", on \
         the same driver and thread count; instructions likewise.\n",
        plan.samples,
        plan.sample.as_millis(),
        group(fewest_calls),
    );
    print_table(&all, &medians, Some(&instructions));
    outln!("\n{}\n", instructions.describe());
    outln!("Best of the same samples:\n");
    print_table(&all, &best, None);
    outln!(
        "\nTower's hedge starts from the history one period of these calls leaves it, {} \
         latencies of {} ms (`Hedge::new_with_mock_latencies`; tower rounds up to whole \
         milliseconds), so it hedges from its first call, after its p95: it cloned its inner \
         service, for the hedged attempt, on {} of {} calls of a check run built the same way. \
         Its first attempt answers at once, so the hedged attempt's timer is made and dropped, \
         never polled; each call records its latency in the hedge's histogram.\n",
        HEDGE_HISTORY.len(),
        HEDGE_HISTORY[0],
        group(hedged),
        group(ALLOC_CALLS),
    );
    outln!(
        "The default budget's deposit (the fixed `after` with the default budget minus the same \
         with `budget = \"off\"`), ns per call:\n"
    );
    outln!("| | inlined, 1 thread | inlined, 2 threads | polled, 1 thread | polled, 2 threads |");
    outln!("|---|---:|---:|---:|---:|");
    for (label, figures) in [("medians", &medians), ("best", &best)] {
        let mut row = format!("| {label} |");
        for (with, without) in figures[FIXED].iter().zip(&figures[WITHOUT_BUDGET]) {
            for (with, without) in with.iter().zip(without) {
                row.push_str(&format!(" {:+.1} |", with - without));
            }
        }
        outln!("{row}");
    }

    outln!(
        "\n## Allocations and sizes\n\nHeap allocations per call over {} calls on 1 thread \
         (after {} warm-up calls), with each driver, and the size of the call's future before \
         its first poll (for a service, of the future `call` returns).\n",
        group(ALLOC_CALLS),
        group(CHUNK)
    );
    outln!("| contender | allocations per call, inlined | polled | future size |");
    outln!("|---|---:|---:|---:|");
    for (c, contender) in all.iter().enumerate() {
        outln!(
            "| {} | {} | {} | {} B |",
            contender.name,
            allocs[c][0],
            allocs[c][1],
            contender.future_size
        );
    }
    outln!(
        "\nOutput `Result<u64, CallError>`: {} B; `Result<u64, Box<dyn Error>>`: {} B.",
        std::mem::size_of::<Result<u64, CallError>>(),
        std::mem::size_of::<Result<u64, BoxError>>(),
    );

    outln!(
        "\nCheck, from `resiliency::race_retry::stats` after every call above (warm-ups, samples, \
         allocation counts):\n"
    );
    outln!("| raced fn | extra attempts | won by extra | deadlines | `after` now | latency samples recorded |");
    outln!("|---|---:|---:|---:|---:|---:|");
    for (c, suffix) in RACED {
        let name = &all[c].name;
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
         on the worst driver (medians) and allocates nothing\n"
    );
    outln!("| contender | threads | worst driver | added | allocations per call | goal | result |");
    outln!("|---|---:|---|---:|---:|---|---|");
    for (c, _) in RACED {
        for (t, threads) in [1, 2].into_iter().enumerate() {
            let (d, worst) = (0..2)
                .map(|d| (d, added(&all, &medians, c, d, t)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .expect("two drivers");
            let allocated = allocs[c][0].max(allocs[c][1]);
            outln!(
                "| {} | {threads} | {} | {worst:+.1} ns | {allocated} | < {GOAL_NS} ns, 0 | {} |",
                all[c].name,
                Driver::ALL[d].name(),
                pass(worst < GOAL_NS && allocated == 0.0)
            );
        }
    }
    outln!();

    outln!(
        "### Goal: the fixed `after` adds at most +{GOAL_INSTRUCTIONS} instructions per call on \
         each driver, fewer than tower's `Hedge`\n"
    );
    outln!("| driver | ours added | tower's added | goal | result |");
    outln!("|---|---:|---:|---|---|");
    for (d, driver) in Driver::ALL.into_iter().enumerate() {
        let ours = instructions.added(&all, FIXED, d);
        let theirs = instructions.added(&all, HEDGE, d);
        outln!(
            "| {} | {} | {} | <= +{GOAL_INSTRUCTIONS}, < tower's | {} |",
            driver.name(),
            or_dash(ours, |n| format!("{n:+.1}")),
            or_dash(theirs, |n| format!("{n:+.1}")),
            match (ours, theirs) {
                (Some(ours), Some(theirs)) => pass(ours <= GOAL_INSTRUCTIONS && ours < theirs),
                _ => "not counted",
            }
        );
    }
    outln!();
}

/// `BENCH_PROFILE=list` prints the contenders' numbers (table order: 0 = plain, 1 = plain with a
/// clock read, 2 = fixed `after`, 3 = `after = "p95"`, 4 = fixed `after` with `budget = "off"`,
/// 5 = plain `service_fn`, 6 = tower's `Hedge`). `BENCH_PROFILE=<number>` runs that contender
/// alone on `BENCH_DRIVER` (`inlined` or `polled`) for exactly `BENCH_CALLS` calls (default 10M)
/// on each of `BENCH_THREADS` threads (default 1), in the same setting as the measurement (a
/// current-thread runtime per thread), and prints one line: what the instruction counts run under
/// callgrind, and a target for `perf`.
fn profile(lock: &str, which: &str) {
    let all = contenders(lock);
    common::cost::profile(&all, which, |contender, driver, calls| {
        current_thread_runtime().block_on(async {
            let mut run = (contender.make)();
            in_chunks(calls, CHUNK, |n| run(driver, n));
        })
    });
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default();
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&lock, &which);
    }
    let plan = Plan::from_env(SAMPLES, SAMPLE, CALLGRIND_CALLS);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[race_retry]` overhead benchmark\n");
    outln!(
        "{cores} cores available; load average at start: {}.\n",
        load_average()
    );
    let started = Instant::now();
    measure_all(&lock, &plan);
    outln!(
        "Whole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    if plan.quick {
        eprintln!("race_overhead: BENCH_QUICK run, not published");
    } else {
        common::publish("race_overhead");
    }
}
