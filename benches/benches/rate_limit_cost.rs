//! The cost of `#[rate_limit]`: `cargo bench -p resiliency-benches --bench rate_limit_cost`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns per
//! call and the instructions per call of one trivial `async fn` returning `Result<u64,
//! CallError>` called plainly and under `#[rate_limit]`, against the peer, governor's direct
//! (not keyed) `RateLimiter` with its default clock, checked in the same shape: an `async fn` of
//! the same output whose body is `limiter.check()` and then the plain work (`limiter` a
//! `&'static` of a limiter built once, the cheapest way to hold one), a refusal mapped to the
//! error's `Down` variant. Three pairs:
//!
//! * **admitting**: `#[rate_limit(rate = "1000000000/s", burst = 1000000000)]` and governor's
//!   `Quota::per_second(u32::MAX)`: neither ever refuses here, so the figure is admission alone
//!   (a clock read and one compare-and-swap on the limit's one word, in both).
//! * **refusing**: `#[rate_limit(rate = "1/h", burst = 1)]` and governor's
//!   `Quota::per_hour(1)` (burst 1): the first call takes the one permit, every later call is
//!   refused (a clock read and a load, no write, in both). Ours then makes its `Rejected` (a
//!   boxed reason: one allocation, freed when the output is dropped), takes a unit of tokio's
//!   cooperative budget and tells `tracing` (no subscriber here); governor hands back its
//!   `NotUntil` on the stack, from which a caller would compute the wait (not done here).
//!
//! Three references, not contenders: the plain call plus one read of each clock:
//! `tokio::time::Instant::now()` alone; the same made ns since a base instant
//! (`saturating_duration_since`, as `u64`), which is what ours does with it; and governor's
//! `DefaultClock::now()` (quanta's TSC-based clock, scaled to ns), what governor's `check()`
//! reads. So the clock's share of each limiter's added cost can be read beside it.
//!
//! * **keyed, admitting**: `#[rate_limit(.., key = x % 1000)]` (a limit per key, 1,000 keys) and
//!   governor's keyed limiter (`RateLimiter::keyed`, its default map) with `check_key(&(x %
//!   1000))`: a hash of the key, a lookup in a concurrent map, then admission on the key's word.
//!
//! "added" is a contender's figure minus the plain `async fn`'s, on the same driver and thread
//! count. Each on both drivers (below), on 1 thread and on 2 OS threads calling the same fn (so
//! sharing its one static limit; for governor, one limiter).
//!
//! The goal: admitting, unkeyed and keyed, ours adds no more ns per call than governor's on every
//! driver and thread count (medians; the table says by how much less or more). The refusing pair
//! is reported beside them, with no goal.
//!
//! # How calls are driven
//!
//! As in the other cost benchmarks (`common::drive`): each call's future is made in place
//! (`pin!(make(i))`) and never moved, and polled to completion on the calling thread by one of two
//! drivers: `inlined`, an `#[inline(always)]` loop, or `polled`, one `#[inline(never)]`
//! `poll_in_place(Pin<&mut F>, &mut Context)`, as an executor polls a task. Workers are plain OS
//! threads pinned to their own CPUs, with the stack shifted between rounds.
//!
//! As in timeout_cost, each worker thread builds a current-thread runtime and runs its calls
//! inside that runtime's `block_on`, under `tokio::task::unconstrained`, yielding to it between
//! two chunks of `CHUNK` calls: a server's calls run in a runtime, and a refusal of ours takes a
//! unit of tokio's cooperative budget, which `block_on`'s 128 units would run out of within a
//! chunk (each request of a server is a task with a fresh budget). Every contender runs in exactly
//! the same setting, so the scheduler's share cancels out of "added".
//!
//! # How time is measured
//!
//! A sample runs a contender on one driver for a fixed time (`SAMPLE`) in chunks of `CHUNK` calls
//! and divides the time by the calls made; with 2 threads both start at a barrier and stop at one
//! flag, and the figure is the mean of the two threads' time per call. Samples are taken
//! round-robin over the contenders, drivers and thread counts (`SAMPLES` rounds,
//! `common::rounds`); the main table and the goal use medians, a second table the best samples.
//!
//! # How instructions are counted
//!
//! As in the breaker benchmark (`common::callgrind`): when `valgrind` is on the `PATH`, the
//! benchmark runs its own executable under `valgrind --tool=callgrind` in the `BENCH_PROFILE`
//! mode (one contender, one driver, 1 thread, the measurement's setting) for N
//! (`CALLGRIND_CALLS`) and 2N calls, one run after another, and reports `(I(2N) - I(N)) / N`;
//! without valgrind it says so and installs nothing. Each run's counts start at the entry to
//! `run_in_runtime` (callgrind's `--zero-before`), after the contenders are built: governor's
//! default clock calibrates itself once per process in a loop bounded by time, whose millions of
//! instructions vary from run to run and would not cancel out. Under valgrind a clock read is not what it
//! is natively (the vDSO's `clock_gettime` and `rdtsc` are emulated), so the clocks' instruction
//! counts say little of their time: read the clock references' ns.
//!
//! `BENCH_QUICK=1` makes a quick run for development (3 samples of 50 ms, N = 20,000) and
//! publishes nothing. `BENCH_PROFILE=<contender>` runs one contender alone, for
//! `valgrind --tool=callgrind` or `perf`: see [`profile`].

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

mod common;
use common::cost::{
    added, in_chunks, measure, or_dash, print_table, Contender, Figures, Grid, Instructions, Plan,
    Role,
};
use common::crate_version;
use common::drive::Driver;
use common::outln;
use common::{
    current_thread_runtime, group, load_average, pass, plain, sample_threads, work, CallError,
};

/// How long one sample runs each contender (`BENCH_QUICK`: 50 ms).
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the best and the median are reported (`BENCH_QUICK`: 3).
const SAMPLES: usize = 9;
/// N of the instruction counts: callgrind runs each contender for N and 2N calls per driver
/// (`BENCH_QUICK`: 20,000).
const CALLGRIND_CALLS: u64 = 200_000;
/// Callgrind's counts are zeroed at the entry to this function, after the set-up: building a
/// governor limiter calibrates quanta's clock against the OS clock in a loop bounded by time,
/// whose instructions vary by millions from one run to the next.
const ZERO_BEFORE: &str = "rate_limit_cost::run_in_runtime";
/// Calls between two looks at the stop flag (and two yields to the runtime).
const CHUNK: u64 = 4096;

// ---------------------------------------------------------------------------------------------
// The calls under test.

/// Admits every call: 10^9 per second with a burst of 10^9 (a second's worth).
#[resiliency::rate_limit(rate = "1000000000/s", burst = 1000000000)]
async fn ours_admitting(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// Admits the first call, then refuses for an hour.
#[resiliency::rate_limit(rate = "1/h", burst = 1)]
async fn ours_refusing(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// Keys per keyed pair: each call's key is its number modulo this.
const KEYS: u64 = 1000;

/// Admits every call, with a limit per key (`x % 1,000`).
#[resiliency::rate_limit(rate = "1000000000/s", burst = 1000000000, key = x % KEYS)]
async fn ours_keyed(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// governor's keyed `check_key()` on `x % 1,000`, then the plain work.
async fn governed_keyed(
    limiter: &'static DefaultKeyedRateLimiter<u64>,
    x: u64,
) -> Result<u64, CallError> {
    match limiter.check_key(&(x % KEYS)) {
        Ok(()) => work(x),
        Err(_not_until) => Err(CallError::Down),
    }
}

/// governor's `check()`, then the plain work; a refusal is the error's `Down`.
async fn governed(limiter: &'static DefaultDirectRateLimiter, x: u64) -> Result<u64, CallError> {
    match limiter.check() {
        Ok(()) => work(x),
        Err(_not_until) => Err(CallError::Down),
    }
}

/// The plain work after one read of what ours reads, `tokio::time::Instant::now()`.
async fn tokio_clock(x: u64) -> Result<u64, CallError> {
    black_box(tokio::time::Instant::now());
    work(x)
}

/// The plain work after what ours does with its clock: `tokio::time::Instant::now()`, then the ns
/// since the limit's base instant (`saturating_duration_since`, as `u64`).
async fn tokio_clock_ns(base: &'static tokio::time::Instant, x: u64) -> Result<u64, CallError> {
    let since = tokio::time::Instant::now().saturating_duration_since(*base);
    black_box(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX));
    work(x)
}

/// The plain work after one read of governor's default clock (quanta's: the TSC read and its
/// scaling to ns, what governor's `check()` reads).
async fn governor_clock(clock: &'static DefaultClock, x: u64) -> Result<u64, CallError> {
    black_box(clock.now());
    work(x)
}

/// A limiter built once and kept for the life of the process, as a server keeps one.
fn leaked(quota: Quota) -> &'static DefaultDirectRateLimiter {
    Box::leak(Box::new(RateLimiter::direct(quota)))
}

// ---------------------------------------------------------------------------------------------
// Contenders, in table order (their numbers are `BENCH_PROFILE`'s).

const PLAIN: usize = 0;
const OURS: usize = 1;
const GOVERNOR: usize = 2;
const OURS_REFUSING: usize = 3;
const GOVERNOR_REFUSING: usize = 4;
const TOKIO_CLOCK: usize = 5;
const TOKIO_CLOCK_NS: usize = 6;
const GOVERNOR_CLOCK: usize = 7;
const OURS_KEYED: usize = 8;
const GOVERNOR_KEYED: usize = 9;

/// The pairs: their name, ours, governor's, and whether the goal applies.
const PAIRS: [(&str, usize, usize, bool); 3] = [
    ("admitting", OURS, GOVERNOR, true),
    ("refusing", OURS_REFUSING, GOVERNOR_REFUSING, false),
    (
        "keyed, admitting (1,000 keys)",
        OURS_KEYED,
        GOVERNOR_KEYED,
        true,
    ),
];

fn contenders(lock: &str) -> Vec<Contender> {
    let governor = crate_version(lock, "governor");
    let quanta = crate_version(lock, "quanta");
    let tokio = crate_version(lock, "tokio");
    let admitting = leaked(Quota::per_second(NonZeroU32::MAX));
    let refusing = leaked(Quota::per_hour(NonZeroU32::MIN).allow_burst(NonZeroU32::MIN));
    let clock: &'static DefaultClock = Box::leak(Box::default());
    let keyed: &'static DefaultKeyedRateLimiter<u64> = Box::leak(Box::new(RateLimiter::keyed(
        Quota::per_second(NonZeroU32::MAX),
    )));
    let base: &'static tokio::time::Instant = Box::leak(Box::new(tokio::time::Instant::now()));
    let all = vec![
        Contender::calls("plain `async fn`", Role::Baseline, PLAIN, (), |_, i| {
            plain(i)
        }),
        Contender::calls(
            "`#[rate_limit(rate = \"1000000000/s\", burst = 1000000000)]`, admits",
            Role::Ours,
            PLAIN,
            (),
            |_, i| ours_admitting(i),
        ),
        Contender::calls(
            format!("governor {governor} `check()`, `Quota::per_second(u32::MAX)`, admits"),
            Role::Peer,
            PLAIN,
            admitting,
            |limiter, i| governed(limiter, i),
        ),
        Contender::calls(
            "`#[rate_limit(rate = \"1/h\", burst = 1)]`, refuses",
            Role::Ours,
            PLAIN,
            (),
            |_, i| ours_refusing(i),
        ),
        Contender::calls(
            format!("governor {governor} `check()`, `Quota::per_hour(1)`, refuses"),
            Role::Peer,
            PLAIN,
            refusing,
            |limiter, i| governed(limiter, i),
        ),
        Contender::calls(
            format!("plain + `tokio::time::Instant::now()` (tokio {tokio}), the read alone"),
            Role::Reference,
            PLAIN,
            (),
            |_, i| tokio_clock(i),
        ),
        Contender::calls(
            "plain + `tokio::time::Instant::now()`, as ns since a base (ours' clock, in full)",
            Role::Reference,
            PLAIN,
            base,
            |base, i| tokio_clock_ns(base, i),
        ),
        Contender::calls(
            format!("plain + governor's `DefaultClock::now()` (quanta {quanta})"),
            Role::Reference,
            PLAIN,
            clock,
            |clock, i| governor_clock(clock, i),
        ),
        Contender::calls(
            "`#[rate_limit(rate = \"1000000000/s\", burst = 1000000000, key = x % 1000)]`, admits",
            Role::Ours,
            PLAIN,
            (),
            |_, i| ours_keyed(i),
        ),
        Contender::calls(
            format!("governor {governor} keyed `check_key(&(x % 1000))`, `Quota::per_second(u32::MAX)`, admits"),
            Role::Peer,
            PLAIN,
            keyed,
            |limiter, i| governed_keyed(limiter, i),
        ),
    ];
    assert_eq!(all.len(), GOVERNOR_KEYED + 1);
    all
}

/// `calls` calls of `contender` on `driver`, inside a current-thread runtime of this thread,
/// outside tokio's cooperative budget, yielding to the runtime after every chunk of at most
/// `CHUNK` calls: the setting of the measurement. Never inlined: the instruction counts start at
/// its entry (`ZERO_BEFORE`).
#[inline(never)]
fn run_in_runtime(contender: &Contender, driver: Driver, calls: u64) {
    let mut run = (contender.make)();
    current_thread_runtime().block_on(tokio::task::unconstrained(async {
        // `in_chunks` cannot await: collect the chunks' sizes first (a few, at most).
        let mut chunks = Vec::new();
        in_chunks(calls, CHUNK, |n| chunks.push(n));
        for n in chunks {
            run(driver, n);
            tokio::task::yield_now().await;
        }
    }));
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
        let mut run = (contender.make)();
        current_thread_runtime().block_on(tokio::task::unconstrained(async {
            run(driver, CHUNK); // warm up (and, refusing, take the one permit)
            tokio::task::yield_now().await;
            timing
                .timed_async(CHUNK, || {
                    run(driver, CHUNK);
                    tokio::task::yield_now()
                })
                .await
        }))
    })
}

/// One pair's table: ours' added ns against governor's, per driver and thread count; with the
/// goal's verdict when `goal`.
fn pair_table(all: &[Contender], medians: &Grid, ours: usize, peer: usize, goal: bool) {
    let verdict = if goal { " result |" } else { "" };
    let rule = if goal { "---|" } else { "" };
    outln!("| driver | threads | ours added | governor's added | ours minus governor's |{verdict}");
    outln!("|---|---:|---:|---:|---:|{rule}");
    for (d, driver) in Driver::ALL.into_iter().enumerate() {
        for (t, threads) in [1, 2].into_iter().enumerate() {
            let (a, b) = (
                added(all, medians, ours, d, t),
                added(all, medians, peer, d, t),
            );
            let result = if goal {
                format!(" {} |", pass(a <= b))
            } else {
                String::new()
            };
            outln!(
                "| {} | {threads} | {a:+.1} | {b:+.1} | {:+.1} |{result}",
                driver.name(),
                a - b,
            );
        }
    }
    outln!();
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
    let instructions = Instructions::count_from(&all, plan.callgrind_calls, Some(ZERO_BEFORE));

    outln!("## Added cost of the rate limit\n");
    outln!(
        "ns per call, median of {} samples of {} ms each (every sample made at least {} calls), \
         with each driver (`inlined`: the future polled in an inlined loop; `polled`: through a \
         non-inlined `poll_in_place(Pin<&mut F>)`, as an executor polls a task; both make the \
         future in place and never copy it) on 1 thread and on 2 OS threads calling the same fn \
         (one shared static limit; for governor, one shared limiter), time per call as each \
         thread sees it. Calls run inside a current-thread tokio runtime per thread (a yield to \
         it every {CHUNK} calls, outside the cooperative budget). In parentheses, \"added\": the \
         contender minus the plain `async fn`, on the same driver and thread count; \
         instructions likewise. The last three rows are references: the plain call plus a read \
         of each limiter's clock (ours' alone, and as ours uses it: ns since a base instant).\n",
        plan.samples,
        plan.sample.as_millis(),
        group(fewest_calls),
    );
    print_table(&all, &medians, Some(&instructions));
    outln!(
        "\n{} Counted from the entry to the calls' runtime, after the contenders were built \
         (governor's clock calibrates itself in a loop bounded by time). Under valgrind a clock \
         read is emulated, so the clocks' instructions say little of their time.\n",
        instructions.describe()
    );
    outln!("Best of the same samples:\n");
    print_table(&all, &best, None);
    let sizes: Vec<String> = all
        .iter()
        .map(|c| format!("{} {} B", c.name, c.future_size))
        .collect();
    outln!(
        "\nSize of the call's future before its first poll: {}.\n",
        sizes.join(", ")
    );

    for (pair, ours, peer, goal) in PAIRS {
        if goal {
            outln!(
                "### Goal: {pair}, `#[rate_limit]` adds no more ns per call than governor's \
                 `check()`, on every driver and thread count (medians)\n"
            );
        } else {
            outln!(
                "### For reference (no goal): {pair}, `#[rate_limit]` against governor's \
                 `check()` (medians)\n"
            );
        }
        pair_table(&all, &medians, ours, peer, goal);
    }

    outln!(
        "### The clocks' share (medians): each limiter's added ns, what its clock adds alone \
         (ours: `tokio::time::Instant::now()` made ns since a base instant, as `admit` does; \
         governor's: quanta's `now()`, scaled to ns), and what is left\n"
    );
    outln!(
        "| pair | driver | threads | ours added | of which its clock | ours less its clock | \
         governor's added | of which its clock | governor's less its clock |"
    );
    outln!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (pair, ours, peer, _) in PAIRS {
        for (d, driver) in Driver::ALL.into_iter().enumerate() {
            for (t, threads) in [1, 2].into_iter().enumerate() {
                let [a, ac, b, bc] = [ours, TOKIO_CLOCK_NS, peer, GOVERNOR_CLOCK]
                    .map(|c| added(&all, &medians, c, d, t));
                outln!(
                    "| {pair} | {} | {threads} | {a:+.1} | {ac:+.1} | {:+.1} | {b:+.1} | \
                     {bc:+.1} | {:+.1} |",
                    driver.name(),
                    a - ac,
                    b - bc,
                );
            }
        }
    }
    outln!();

    outln!("### Instructions added per call (not a goal)\n");
    outln!(
        "| driver | ours, admits | governor's, admits | ours, refuses | governor's, refuses | \
         tokio's clock read | tokio's clock as ns since a base | quanta's clock |"
    );
    outln!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (d, driver) in Driver::ALL.into_iter().enumerate() {
        let cells = [
            OURS,
            GOVERNOR,
            OURS_REFUSING,
            GOVERNOR_REFUSING,
            TOKIO_CLOCK,
            TOKIO_CLOCK_NS,
            GOVERNOR_CLOCK,
        ]
        .map(|c| or_dash(instructions.added(&all, c, d), |n| format!("{n:+.1}")));
        outln!("| {} | {} |", driver.name(), cells.join(" | "));
    }
    outln!();
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=list` prints the contenders' numbers (table order: 0 = plain, 1 = ours
/// admitting, 2 = governor admitting, 3 = ours refusing, 4 = governor refusing, 5 = plain + tokio's
/// clock read, 6 = plain + tokio's clock as ns since a base, 7 = plain + governor's clock). `BENCH_PROFILE=<number>` runs that contender alone on
/// `BENCH_DRIVER` (`inlined` or `polled`) for exactly `BENCH_CALLS` calls (default 10M) on each of
/// `BENCH_THREADS` threads (default 1), in the same setting as the measurement (a current-thread
/// runtime per thread, outside the cooperative budget, a yield per chunk), and prints one line:
/// what the instruction counts run under callgrind, and a target for `perf`.
fn profile(lock: &str, which: &str) {
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
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[rate_limit]` cost benchmark\n");
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
        eprintln!("rate_limit_cost: BENCH_QUICK run, not published");
    } else {
        common::publish("rate_limit_cost");
    }
}
