//! The cost of the `#[too_busy]` check: `cargo bench -p resiliency-benches --bench too_busy_cost`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns per
//! call and the instructions per call of one trivial `async fn` returning `Result<u64, E>` called
//! plainly and under `#[too_busy]` (defaults: the runtime's lag alone, `max_lag` 70 ms),
//! `#[too_busy(max_in_flight = 1024)]`, `#[too_busy(max_latency = "200ms")]` and
//! `#[too_busy(max_in_flight = "auto")]` (started and capped at 1024, so it admits every call,
//! and pays for learning: a clock read at each end of a call and the window's counters), and of
//! the peer, tower's usual shedding stack: `ServiceBuilder::new().load_shed()
//! .concurrency_limit(1024).service(service_fn(..))` over the same work, called as tower services
//! are (`ready()`, then `call(i)`; never full, so never shedding). Each on both drivers (below),
//! on 1 thread and on 2 OS threads calling the same fn (so sharing its one static guard; for
//! tower, clones of one service sharing its semaphore). "added" is a contender's figure minus its
//! baseline's on the same driver and thread count: the plain `async fn` for ours, and for tower
//! the same work as a plain `tower::service_fn` called the same way. The plain and default calls
//! are repeated with a pointer-sized error type (`Box<dyn Error>`, which tower's layers require
//! of a service): the difference between the two "added" figures is the cost of moving a
//! different output through one more future, not of the check itself.
//!
//! The goals: the default attribute adds under 5 ns per call on the worst driver, on 1 and 2
//! threads; and it adds fewer instructions per call than `load_shed` over `concurrency_limit`
//! adds to its plain service, on each driver.
//!
//! # How calls are driven
//!
//! As in the breaker benchmark (`benches/breaker.rs`, `common::drive`): each call's future is made
//! in place (`pin!(make(i))`) and never moved, and polled to completion on the calling thread by
//! one of two drivers: `inlined`, an `#[inline(always)]` loop, or `polled`, one
//! `#[inline(never)] poll_in_place(Pin<&mut F>, &mut Context)`, as an executor polls a task. No
//! future is passed by value to a function that is not inlined, for any contender (such a copy,
//! right after the future was written, stalls on store forwarding). A tower service's call is two
//! futures, `ready()` and `call(i)`, each made in place and driven so. Workers are plain OS
//! threads pinned to their own CPUs, with the stack shifted between rounds.
//!
//! One difference: the lag signal needs a tokio runtime. The guard reads the lag that the
//! runtime's monitor keeps, and starts that monitor on the caller's runtime the first time; with no
//! runtime there is no monitor, and every call would try (and fail) to start one, which is not the
//! path a server takes. So each worker thread builds a current-thread runtime (time driver on)
//! and runs its calls inside that runtime's `block_on`: the runtime's context is entered, the
//! first guarded call starts the monitor on it, and between two chunks of calls the worker yields
//! to the runtime (`tokio::task::yield_now`), so the monitor's timer fires and it samples the lag
//! as in a server. Every call inside a chunk still goes through the driver, so a call's figure
//! holds the future's construction, its poll and the guard, and nothing of the scheduler. Every
//! contender runs in exactly the same setting (runtime, yields), so the scheduler's share (one
//! yield per `CHUNK` calls) cancels out of "added". The number of lag samples the monitors took
//! while calls were measured is printed, as a check that the signal was live.
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
//! without valgrind it says so and installs nothing. Under callgrind the process runs some 50
//! times slower and the runtime's timers fire late by valgrind's doing, which the lag signal
//! would take for lag (looking at the clock at every call, refusing some): in those runs
//! `max_lag` is raised to an hour and the monitor's interval to 1 s
//! (`resiliency::too_busy::set_max_lag`, `set_interval`), so that the guard takes the path it takes
//! natively (admitted, a look at the monitor's timer every 64 calls).
//!
//! `BENCH_QUICK=1` makes a quick run for development (3 samples of 50 ms, N = 20,000) and
//! publishes nothing. `BENCH_PROFILE=<contender>` runs one contender alone, for
//! `valgrind --tool=callgrind` or `perf`: see [`profile`].

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use resiliency::too_busy;
use tower::ServiceBuilder;

mod common;
use common::cost::{
    added, clones_of, in_chunks, measure, print_table, Contender, Figures, Instructions, Plan, Role,
};
use common::crate_version;
use common::drive::Driver;
use common::outln;
use common::{
    current_thread_runtime, group, load_average, pass, plain, plain_boxed, sample_threads, work,
    BoxError, CallError,
};

/// How long one sample runs each contender (`BENCH_QUICK`: 50 ms).
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the best and the median are reported (`BENCH_QUICK`: 3).
const SAMPLES: usize = 9;
/// N of the instruction counts: callgrind runs each contender for N and 2N calls per driver
/// (`BENCH_QUICK`: 20,000).
const CALLGRIND_CALLS: u64 = 200_000;
/// Calls between two looks at the stop flag (and two yields to the runtime).
const CHUNK: u64 = 4096;
/// The goal: added ns per call of the default `#[too_busy]`.
const GOAL_NS: f64 = 5.0;
/// The in-flight limit of `#[too_busy(max_in_flight = ..)]` and of tower's `concurrency_limit`.
const MAX_IN_FLIGHT: usize = 1024;

// ---------------------------------------------------------------------------------------------
// The calls under test.

#[too_busy]
async fn busy_default(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy(max_in_flight = 1024)]
async fn busy_in_flight(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy(max_latency = "200ms")]
async fn busy_latency(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy(max_in_flight = "auto", auto_initial = 1024, auto_max = 1024)]
async fn busy_auto(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[too_busy]
async fn busy_default_boxed(x: u64) -> Result<u64, BoxError> {
    work(x).map_err(|_| "down".into())
}

// ---------------------------------------------------------------------------------------------
// Contenders, in table order (their numbers are `BENCH_PROFILE`'s).

const PLAIN: usize = 0;
const DEFAULT: usize = 1;
const PLAIN_BOXED: usize = 5;
const DEFAULT_BOXED: usize = 6;
const SERVICE_FN: usize = 7;
const LOAD_SHED: usize = 8;

fn contenders(lock: &str) -> Vec<Contender> {
    let lag = resiliency::too_busy::max_lag().as_millis();
    // tower's usual shedding stack: `load_shed` answers at once with `Overloaded` when the
    // concurrency limit below it is not ready. Clones share the limit's semaphore.
    let shedding = ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(MAX_IN_FLIGHT)
        .service(tower::service_fn(plain_boxed));
    let all = vec![
        Contender::calls("plain `async fn`", Role::Baseline, PLAIN, (), |_, i| {
            plain(i)
        }),
        Contender::calls(
            format!("`#[too_busy]` (defaults: lag, max_lag {lag} ms)"),
            Role::Ours,
            PLAIN,
            (),
            |_, i| busy_default(i),
        ),
        Contender::calls(
            format!("`#[too_busy(max_in_flight = {MAX_IN_FLIGHT})]`"),
            Role::Ours,
            PLAIN,
            (),
            |_, i| busy_in_flight(i),
        ),
        Contender::calls(
            "`#[too_busy(max_latency = \"200ms\")]`",
            Role::Ours,
            PLAIN,
            (),
            |_, i| busy_latency(i),
        ),
        Contender::calls(
            "`#[too_busy(max_in_flight = \"auto\")]` (from 1024)",
            Role::Ours,
            PLAIN,
            (),
            |_, i| busy_auto(i),
        ),
        Contender::calls(
            "plain `async fn`, `Box<dyn Error>` error",
            Role::Baseline,
            PLAIN_BOXED,
            (),
            |_, i| plain_boxed(i),
        ),
        Contender::calls(
            "`#[too_busy]` (defaults), `Box<dyn Error>` error",
            Role::Ours,
            PLAIN_BOXED,
            (),
            |_, i| busy_default_boxed(i),
        ),
        Contender::plain_service(SERVICE_FN),
        Contender::requests(
            format!(
                "tower {} `load_shed().concurrency_limit({MAX_IN_FLIGHT})`",
                crate_version(lock, "tower")
            ),
            Role::Peer,
            SERVICE_FN,
            clones_of(shedding),
        ),
    ];
    assert_eq!(all[LOAD_SHED].base, SERVICE_FN);
    assert_eq!(all[DEFAULT_BOXED].base, PLAIN_BOXED);
    all
}

/// `calls` calls of `contender` on `driver`, inside a current-thread runtime of this thread,
/// yielding to it after every chunk of at most `CHUNK` calls: the setting of the measurement.
fn run_in_runtime(contender: &Contender, driver: Driver, calls: u64) {
    let mut run = (contender.make)();
    current_thread_runtime().block_on(async {
        // `in_chunks` cannot await: collect the chunks' sizes first (a few, at most).
        let mut chunks = Vec::new();
        in_chunks(calls, CHUNK, |n| chunks.push(n));
        for n in chunks {
            run(driver, n);
            tokio::task::yield_now().await;
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// Lag samples taken by all monitors so far (counted by an `on_lag` callback at threshold 0).
static LAG_SAMPLES: AtomicU64 = AtomicU64::new(0);

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
        let mut run = (contender.make)();
        current_thread_runtime().block_on(async {
            run(driver, CHUNK); // warm up; starts this runtime's monitor
            tokio::task::yield_now().await;
            timing
                .timed_async(CHUNK, || {
                    run(driver, CHUNK);
                    tokio::task::yield_now() // the monitor's timer may fire
                })
                .await
        })
    })
}

fn measure_all(lock: &str, plan: &Plan) {
    let all = contenders(lock);
    let mut guarded_runtimes = 0;
    let lag_samples_before = LAG_SAMPLES.load(Relaxed);
    let Figures {
        medians,
        best,
        fewest_calls,
    } = measure(&all, plan.samples, |contender, driver, threads, round| {
        // Only guards with the lag signal (those that name no other) start a monitor.
        if [DEFAULT, DEFAULT_BOXED]
            .iter()
            .any(|&c| std::ptr::eq(contender, &all[c]))
        {
            guarded_runtimes += threads;
        }
        sample(contender, driver, threads, round, plan.sample)
    });
    let lag_samples = LAG_SAMPLES.load(Relaxed) - lag_samples_before;
    let instructions = Instructions::count(&all, plan.callgrind_calls);

    outln!("## Added cost of the check\n");
    outln!(
        "ns per call, median of {} samples of {} ms each (every sample made at least {} calls), \
         with each driver (`inlined`: the future polled in an inlined loop; `polled`: through a \
         non-inlined `poll_in_place(Pin<&mut F>)`, as an executor polls a task; both make the \
         future in place and never copy it) on 1 thread and on 2 OS threads calling the same fn \
         (one shared static guard; for tower, clones of one service sharing one semaphore), time \
         per call as each thread sees it. Calls run inside a current-thread tokio runtime per \
         thread (its lag monitor live). In parentheses, \"added\": the contender minus the \
         baseline named in \"added vs\", on the same driver and thread count; instructions \
         likewise.\n",
        plan.samples,
        plan.sample.as_millis(),
        group(fewest_calls),
    );
    print_table(&all, &medians, Some(&instructions));
    outln!("\n{}\n", instructions.describe());
    outln!("Best of the same samples:\n");
    print_table(&all, &best, None);
    let expected = guarded_runtimes as u128 * plan.sample.as_millis()
        / resiliency::too_busy::interval().as_millis().max(1);
    outln!(
        "\nLag monitors took {lag_samples} samples during the guarded measurements (about \
         {expected} if on time: {guarded_runtimes} runtimes of the two contenders on the lag \
         signal, each living about {} ms, a monitor sampling every {} ms), so the lag signal \
         was live.\n",
        plan.sample.as_millis(),
        resiliency::too_busy::interval().as_millis()
    );
    let sizes: Vec<String> = all
        .iter()
        .map(|c| format!("{} {} B", c.name, c.future_size))
        .collect();
    outln!(
        "Size of the call's future before its first poll (for a service, of the future `call` \
         returns): {}. Size of the output: `Result<u64, CallError>` {} B, `Result<u64, Box<dyn \
         Error>>` {} B.\n",
        sizes.join(", "),
        std::mem::size_of::<Result<u64, CallError>>(),
        std::mem::size_of::<Result<u64, BoxError>>(),
    );

    outln!(
        "### Goal: `#[too_busy]` (defaults) adds under {GOAL_NS} ns per call, on the worst \
         driver (medians)\n"
    );
    outln!("| threads | inlined | polled | worst | goal | result |");
    outln!("|---:|---:|---:|---:|---:|---|");
    for (t, threads) in [1, 2].into_iter().enumerate() {
        let [inlined, polled] = [0, 1].map(|d| added(&all, &medians, DEFAULT, d, t));
        let worst = inlined.max(polled);
        outln!(
            "| {threads} | {inlined:+.1} | {polled:+.1} | {worst:+.1} | < {GOAL_NS} | {} |",
            pass(worst < GOAL_NS)
        );
    }
    outln!();

    outln!(
        "### Goal: `#[too_busy]` (defaults) adds fewer instructions per call than tower's \
         `load_shed` over `concurrency_limit`, on each driver\n"
    );
    instructions.fewer_than(&all, DEFAULT, LOAD_SHED);
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=list` prints the contenders' numbers (table order: 0 = plain, 1 = defaults,
/// 2 = max_in_flight, 3 = max_latency, 4 = max_in_flight = "auto", 5 = plain with a boxed error,
/// 6 = defaults with a boxed error, 7 = plain `service_fn`, 8 = tower's `load_shed` over
/// `concurrency_limit`). `BENCH_PROFILE=<number>` runs that contender alone on `BENCH_DRIVER`
/// (`inlined` or `polled`) for exactly `BENCH_CALLS` calls (default 10M) on each of
/// `BENCH_THREADS` threads (default 1), in the same setting as the measurement (a current-thread
/// runtime per thread, a yield per chunk), and prints one line: what the instruction counts run
/// under callgrind, and a target for `perf`.
fn profile(lock: &str, which: &str) {
    if common::callgrind::under_callgrind() {
        // Callgrind slows the process some 50 times, and the runtime's timers fire late by its
        // doing: the lag signal would see lag that a native run does not have, look at the clock
        // at every call and refuse some. Raised far above what callgrind adds, `max_lag` and the
        // monitor's interval keep the guard on its native path: admitted, one look at the
        // monitor's timer (a clock read) every 64 calls.
        resiliency::too_busy::set_max_lag(Duration::from_secs(3600));
        resiliency::too_busy::set_interval(Duration::from_secs(1));
    }
    let all = contenders(lock);
    common::cost::profile(&all, which, run_in_runtime);
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default();
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&lock, &which);
    }
    let plan = Plan::from_env(SAMPLES, SAMPLE, CALLGRIND_CALLS);
    resiliency::too_busy::on_lag(Duration::ZERO, |_| {
        LAG_SAMPLES.fetch_add(1, Relaxed);
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[too_busy]` cost benchmark\n");
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
        eprintln!("too_busy_cost: BENCH_QUICK run, not published");
    } else {
        common::publish("too_busy_cost");
    }
}
