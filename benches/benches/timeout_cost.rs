//! The cost of `#[timeout]`: `cargo bench -p resiliency-benches --bench timeout_cost`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns per
//! call and the instructions per call of one trivial `async fn` returning `Result<u64,
//! CallError>` called plainly, under `#[timeout("1s")]`, and wrapped in
//! `tokio::time::timeout(Duration::from_secs(1), plain(x))` inside an `async fn` of the same
//! output type (its `Elapsed` mapped to the error's `Down` variant, so that its output is the
//! same `Result<u64, CallError>` as the others': the same shape as the attribute's, an `async fn`
//! awaiting the guarded future); and of the peer tower layer, tower's `Timeout` (1 s) over a
//! `service_fn`, called as tower services are (`ready()`, then `call(i)`), against the plain
//! `service_fn` called the same way. Each on both drivers (below), on 1 thread and on 2 OS threads
//! calling the same fn (so sharing its one static `Timeout`; for tower, clones of one service).
//! "added" is a contender's figure minus its baseline's on the same driver, thread count and
//! shape: the plain `async fn` for ours and tokio's, the plain `service_fn` for tower's.
//!
//! Two shapes of body, each with its own baselines:
//!
//! * **(a) answers at once**: the body answers on its first poll. Ours reads no clock and makes
//!   no timer; `tokio::time::timeout` reads the clock and makes its `Sleep` (a handle on the
//!   runtime) when the call is made, and tower's `Timeout` when `call` is; neither registers its
//!   timer, which happens at the timer's first poll.
//! * **(b) waits once**: the body returns `Pending` once, having woken its own waker (a
//!   hand-written `WaitOnce`, not `tokio::task::yield_now`, whose wake-up the runtime defers to
//!   its next turn: the driver would park for ever), and answers at its second poll. Every
//!   contender then polls its timer, so registers it with the runtime's time driver, and
//!   deregisters it when the call ends; ours reads the clock at the first wait and arms its
//!   timer then, tokio's and tower's read it and make theirs when the call is made. All three
//!   hold their timer in their future. Ours also publishes the call's deadline to the body's
//!   second poll (`resiliency::deadline`), which the others do not offer.
//!
//! The goal: in shape (a), ours adds no more ns per call than `tokio::time::timeout` on every
//! driver and thread count (medians; the table says by how much less). Shape (b) is reported
//! beside it, ours against tokio's, with no goal: there every contender's cost is its timer's
//! registration with the runtime.
//!
//! # How calls are driven
//!
//! As in the breaker and too_busy_cost benchmarks (`common::drive`): each call's future is made in
//! place (`pin!(make(i))`) and never moved, and polled to completion on the calling thread by one
//! of two drivers: `inlined`, an `#[inline(always)]` loop, or `polled`, one `#[inline(never)]
//! poll_in_place(Pin<&mut F>, &mut Context)`, as an executor polls a task. On `Pending` the driver
//! parks the thread until the waker unparks it (in shape (b), at once: the body woke it before
//! returning `Pending`, so the park only takes the token back). A tower service's call is two
//! futures, `ready()` and `call(i)`, each made in place and driven so. Workers are plain OS
//! threads pinned to their own CPUs, with the stack shifted between rounds.
//!
//! The timers need a tokio runtime with its time driver: `tokio::time::timeout` and tower's
//! `Timeout` panic without one when the call is made, ours at the body's first wait. So, as in
//! too_busy_cost, each worker thread builds a current-thread runtime (time driver on) and runs
//! its calls inside that runtime's `block_on`, yielding to it (`tokio::task::yield_now`) between
//! two chunks of `CHUNK` calls, so that the runtime turns its time driver as in a server. The
//! calls run under `tokio::task::unconstrained`: `block_on` polls its future with tokio's
//! cooperative budget (128 operations), which the chunk's timers would spend within the first
//! 128 calls; a `Sleep` polled with no budget left neither registers nor reads the clock (it
//! wakes the task and returns `Pending`), so the rest of the chunk would measure a path no server
//! takes, where each request is a task with a fresh budget. Every contender runs in exactly the
//! same setting (runtime, yields, no budget), so the scheduler's share cancels out of "added".
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
//! without valgrind it says so and installs nothing. Callgrind slows the process some 50 times;
//! no call comes near its 1 s limit even so, and the timers never fire.
//!
//! `BENCH_QUICK=1` makes a quick run for development (3 samples of 50 ms, N = 20,000) and
//! publishes nothing. `BENCH_PROFILE=<contender>` runs one contender alone, for
//! `valgrind --tool=callgrind` or `perf`: see [`profile`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower::ServiceBuilder;

mod common;
use common::cost::{
    added, clones_of, in_chunks, measure, or_dash, print_table, Contender, Figures, Grid,
    Instructions, Plan, Role,
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
/// The time limit of every contender: far longer than any call here takes, even under callgrind.
const LIMIT: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------------
// The calls under test.

/// A body's one wait: `Pending` once, having woken its waker (so the driver's park returns at
/// once), then ready.
struct WaitOnce {
    waited: bool,
}

impl Future for WaitOnce {
    type Output = ();

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.waited {
            return Poll::Ready(());
        }
        self.waited = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn wait_once() -> WaitOnce {
    WaitOnce { waited: false }
}

// (a) answers on its first poll.

#[resiliency::timeout("1s")]
async fn ours_at_once(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// `tokio::time::timeout` around the plain call, its `Elapsed` mapped into the error: the same
/// output as the others, and the attribute's shape (an `async fn` awaiting the guarded future).
async fn tokio_at_once(x: u64) -> Result<u64, CallError> {
    match tokio::time::timeout(LIMIT, plain(x)).await {
        Ok(answer) => answer,
        Err(_elapsed) => Err(CallError::Down),
    }
}

// (b) waits once.

async fn plain_wait(x: u64) -> Result<u64, CallError> {
    wait_once().await;
    work(x)
}

#[resiliency::timeout("1s")]
async fn ours_wait(x: u64) -> Result<u64, CallError> {
    wait_once().await;
    work(x)
}

async fn tokio_wait(x: u64) -> Result<u64, CallError> {
    match tokio::time::timeout(LIMIT, plain_wait(x)).await {
        Ok(answer) => answer,
        Err(_elapsed) => Err(CallError::Down),
    }
}

/// The tower contenders' body in shape (b): `plain_boxed` after one wait.
async fn plain_boxed_wait(x: u64) -> Result<u64, BoxError> {
    wait_once().await;
    work(x).map_err(|_| "down".into())
}

// ---------------------------------------------------------------------------------------------
// Contenders, in table order (their numbers are `BENCH_PROFILE`'s).

const PLAIN: usize = 0;
const OURS: usize = 1;
const TOKIO: usize = 2;
const SERVICE_FN: usize = 3;
const TOWER: usize = 4;
const PLAIN_WAIT: usize = 5;
const OURS_WAIT: usize = 6;
const TOKIO_WAIT: usize = 7;
const SERVICE_FN_WAIT: usize = 8;
const TOWER_WAIT: usize = 9;

/// The two shapes: their name, and their contenders (ours, tokio's, tower's).
const SHAPES: [(&str, [usize; 3]); 2] = [
    ("(a) answers at once", [OURS, TOKIO, TOWER]),
    ("(b) waits once", [OURS_WAIT, TOKIO_WAIT, TOWER_WAIT]),
];

fn contenders(lock: &str) -> Vec<Contender> {
    let tokio = crate_version(lock, "tokio");
    let tower = crate_version(lock, "tower");
    let at_once = ServiceBuilder::new()
        .timeout(LIMIT)
        .service(tower::service_fn(plain_boxed));
    let waits = ServiceBuilder::new()
        .timeout(LIMIT)
        .service(tower::service_fn(plain_boxed_wait));
    let all = vec![
        // (a)
        Contender::calls("(a) plain `async fn`", Role::Baseline, PLAIN, (), |_, i| {
            plain(i)
        }),
        Contender::calls("(a) `#[timeout(\"1s\")]`", Role::Ours, PLAIN, (), |_, i| {
            ours_at_once(i)
        }),
        Contender::calls(
            format!("(a) tokio {tokio} `time::timeout(1 s, ..)`, `Elapsed` mapped"),
            Role::Peer,
            PLAIN,
            (),
            |_, i| tokio_at_once(i),
        ),
        Contender::requests(
            "(a) plain `service_fn` (`ready` + `call`)",
            Role::Baseline,
            SERVICE_FN,
            || tower::service_fn(plain_boxed),
        ),
        Contender::requests(
            format!("(a) tower {tower} `timeout(1 s)`"),
            Role::Peer,
            SERVICE_FN,
            clones_of(at_once),
        ),
        // (b)
        Contender::calls(
            "(b) plain `async fn`, waits once",
            Role::Baseline,
            PLAIN_WAIT,
            (),
            |_, i| plain_wait(i),
        ),
        Contender::calls(
            "(b) `#[timeout(\"1s\")]`, waits once",
            Role::Ours,
            PLAIN_WAIT,
            (),
            |_, i| ours_wait(i),
        ),
        Contender::calls(
            format!("(b) tokio {tokio} `time::timeout(1 s, ..)`, waits once"),
            Role::Peer,
            PLAIN_WAIT,
            (),
            |_, i| tokio_wait(i),
        ),
        Contender::requests(
            "(b) plain `service_fn`, waits once",
            Role::Baseline,
            SERVICE_FN_WAIT,
            || tower::service_fn(plain_boxed_wait),
        ),
        Contender::requests(
            format!("(b) tower {tower} `timeout(1 s)`, waits once"),
            Role::Peer,
            SERVICE_FN_WAIT,
            clones_of(waits),
        ),
    ];
    assert_eq!(all[TOWER].base, SERVICE_FN);
    assert_eq!(all[OURS_WAIT].base, PLAIN_WAIT);
    assert_eq!(all[TOWER_WAIT].base, SERVICE_FN_WAIT);
    all
}

/// `calls` calls of `contender` on `driver`, inside a current-thread runtime of this thread,
/// outside tokio's cooperative budget, yielding to the runtime after every chunk of at most
/// `CHUNK` calls: the setting of the measurement.
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
            run(driver, CHUNK); // warm up
            tokio::task::yield_now().await;
            timing
                .timed_async(CHUNK, || {
                    run(driver, CHUNK);
                    tokio::task::yield_now() // the runtime turns its time driver
                })
                .await
        }))
    })
}

/// The goal table of one shape: ours' added ns against tokio's, per driver and thread count.
fn goal_ns(all: &[Contender], medians: &Grid, ours: usize, tokio: usize, goal: bool) {
    if goal {
        outln!("| driver | threads | ours added | tokio's added | ours minus tokio's | result |");
        outln!("|---|---:|---:|---:|---:|---|");
    } else {
        outln!("| driver | threads | ours added | tokio's added | ours minus tokio's |");
        outln!("|---|---:|---:|---:|---:|");
    }
    for (d, driver) in Driver::ALL.into_iter().enumerate() {
        for (t, threads) in [1, 2].into_iter().enumerate() {
            let (a, b) = (
                added(all, medians, ours, d, t),
                added(all, medians, tokio, d, t),
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
    let instructions = Instructions::count(&all, plan.callgrind_calls);

    outln!("## Added cost of the time limit\n");
    outln!(
        "ns per call, median of {} samples of {} ms each (every sample made at least {} calls), \
         with each driver (`inlined`: the future polled in an inlined loop; `polled`: through a \
         non-inlined `poll_in_place(Pin<&mut F>)`, as an executor polls a task; both make the \
         future in place and never copy it) on 1 thread and on 2 OS threads calling the same fn \
         (one shared static `Timeout`; for tower, clones of one service), time per call as each \
         thread sees it. Calls run inside a current-thread tokio runtime per thread (time driver \
         on, a yield to it every {CHUNK} calls, outside the cooperative budget). Shape (a): the \
         body answers on its first poll; (b): it returns `Pending` once, having woken itself, so \
         every time limit makes and registers its timer. In parentheses, \"added\": the \
         contender minus the baseline named in \"added vs\", on the same driver, thread count \
         and shape; instructions likewise.\n",
        plan.samples,
        plan.sample.as_millis(),
        group(fewest_calls),
    );
    print_table(&all, &medians, Some(&instructions));
    outln!("\n{}\n", instructions.describe());
    outln!("Best of the same samples:\n");
    print_table(&all, &best, None);
    let sizes: Vec<String> = all
        .iter()
        .map(|c| format!("{} {} B", c.name, c.future_size))
        .collect();
    outln!(
        "\nSize of the call's future before its first poll (for a service, of the future `call` \
         returns): {}.\n",
        sizes.join(", "),
    );

    for (goal, (shape, [ours, tokio, _])) in SHAPES.into_iter().enumerate() {
        if goal == 0 {
            outln!(
                "### Goal: in shape {shape}, `#[timeout]` adds no more ns per call than \
                 `tokio::time::timeout`, on every driver and thread count (medians)\n"
            );
        } else {
            outln!(
                "### For reference (no goal): in shape {shape}, `#[timeout]` against \
                 `tokio::time::timeout` (medians)\n"
            );
        }
        goal_ns(&all, &medians, ours, tokio, goal == 0);
    }

    outln!("### Instructions added per call (not a goal)\n");
    outln!("| shape | driver | ours added | tokio's added | tower's added |");
    outln!("|---|---|---:|---:|---:|");
    for (shape, [ours, tokio, tower]) in SHAPES {
        for (d, driver) in Driver::ALL.into_iter().enumerate() {
            let [a, b, c] = [ours, tokio, tower]
                .map(|c| or_dash(instructions.added(&all, c, d), |n| format!("{n:+.1}")));
            outln!("| {shape} | {} | {a} | {b} | {c} |", driver.name());
        }
    }
    outln!();
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=list` prints the contenders' numbers (table order: 0 = plain, 1 = ours, 2 =
/// `tokio::time::timeout`, 3 = plain `service_fn`, 4 = tower's `Timeout`, all answering at once;
/// 5 to 9 the same, the body waiting once). `BENCH_PROFILE=<number>` runs that contender alone on
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
    outln!("# resiliency `#[timeout]` cost benchmark\n");
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
        eprintln!("timeout_cost: BENCH_QUICK run, not published");
    } else {
        common::publish("timeout_cost");
    }
}
