//! The cost of the `metrics` feature per call:
//! `cargo bench -p resiliency-benches --features metrics --bench metrics_cost`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`): the ns per
//! call of one trivial `async fn` returning `Result<u64, E>` called plainly, under `#[breaker]`
//! (count rule, defaults; closed, every call a success), `#[too_busy]` (defaults: the runtime's
//! lag; every call admitted) and `#[race_retry(retries = 2, after = "150ms", total = "450ms")]`
//! (the first attempt answers at once), on each of the two drivers of the other cost benchmarks
//! (`inlined` and `polled`, `common::drive`), on 1 thread and on 2 OS threads calling the same
//! fn, in two phases of one run:
//!
//! 1. **No recorder**: `metrics`' no-op, as in a program that enables the feature and installs
//!    nothing. The sites' handles are empty; a call adds to its site's counts all the same.
//! 2. **Prometheus recorder**: `metrics-exporter-prometheus`'s recorder installed as the global
//!    one (built, not served: rendering is not on a call's path), then fresh sites (other fns,
//!    the same attributes) measured, so that their handles are the recorder's.
//!
//! A process has one global recorder, installed once: the first phase runs entirely before it. The
//! plain call runs in both phases as the control. "added" is the attribute's figure minus the
//! plain call's in the same phase; "recorder" is the phase-2 figure minus the phase-1 figure of
//! the same attribute. At the end, the exporter is flushed and the recorder's rendering read
//! back: the calls it counted for each phase-2 site are printed, as a check that the handles
//! were live.
//!
//! Cargo builds a package's dependencies with one set of features, so the figures without the
//! feature at all are those of `breaker`, `too_busy_cost` and `race_overhead`.
//!
//! # How calls are driven and timed
//!
//! Each call's future is made in place and polled to completion on the calling thread by one of
//! the two drivers of `common::drive` (`inlined`: an inlined loop; `polled`: through a
//! non-inlined `poll_in_place`, as an executor polls a task), one fresh future per call, on plain
//! OS threads pinned to their own CPUs, with the stack shifted between rounds; each worker runs
//! its calls inside a current-thread tokio runtime of its own (the lag monitor of `#[too_busy]`
//! runs on it) and yields to it between chunks of `CHUNK` calls. A sample runs a contender on one
//! driver for `SAMPLE` and divides the time by the calls made; samples are taken round-robin over
//! the contenders and drivers (`SAMPLES` rounds), and the tables show medians.
//!
//! The goals, with the Prometheus recorder: a metered closed breaker adds under 10 ns per call,
//! and each attribute on 2 threads sharing its site costs within 5 ns of the same on 1 thread, on
//! each driver.
//!
//! `BENCH_PROFILE=<contender>` runs one contender alone, for `valgrind --tool=callgrind`: see
//! [`profile`].

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use resiliency::{breaker, race_retry, too_busy};

mod common;
use common::drive::{calls, Driver};
use common::outln;
use common::{
    current_thread_runtime, group, load_average, pass, plain, profile_calls, rounds,
    sample_threads, thread_waker, work, CallError, Rounds,
};

/// How long one sample runs each contender.
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the median is reported.
const SAMPLES: usize = 9;
/// Calls between two looks at the stop flag (and two yields to the runtime).
const CHUNK: u64 = 4096;
/// Goal: a metered closed breaker adds under this many ns per call (Prometheus recorder).
const GOAL_BREAKER_NS: f64 = 10.0;
/// Goal: 2 threads on one site cost within this many ns per call of 1 thread (Prometheus
/// recorder).
const GOAL_THREADS_NS: f64 = 5.0;

// ---------------------------------------------------------------------------------------------
// The calls under test: each attribute twice, one site per phase.

macro_rules! sites {
    ($breaker:ident, $busy:ident, $race:ident) => {
        #[breaker]
        async fn $breaker(x: u64) -> Result<u64, CallError> {
            work(x)
        }

        #[too_busy]
        async fn $busy(x: u64) -> Result<u64, CallError> {
            work(x)
        }

        #[race_retry(retries = 2, after = "150ms", total = "450ms")]
        async fn $race(x: u64) -> Result<u64, CallError> {
            work(x)
        }
    };
}

sites!(breaker_noop, too_busy_noop, race_noop);
sites!(breaker_prometheus, too_busy_prometheus, race_prometheus);

/// A contender: its name, and what makes `n` calls on a driver.
type Contender = (&'static str, fn(Driver, u64));

const NAMES: [&str; 4] = [
    "plain `async fn`",
    "`#[breaker]` (count rule, closed)",
    "`#[too_busy]` (defaults, admitted)",
    "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]` (attempt 1 answers)",
];

/// The contenders of phase 1 (no recorder), in table order.
const NOOP: [Contender; 4] = [
    (NAMES[0], |d, n| run(d, n, plain)),
    (NAMES[1], |d, n| run(d, n, breaker_noop)),
    (NAMES[2], |d, n| run(d, n, too_busy_noop)),
    (NAMES[3], |d, n| run(d, n, race_noop)),
];

/// The contenders of phase 2 (the Prometheus recorder), in table order.
const PROMETHEUS: [Contender; 4] = [
    (NAMES[0], |d, n| run(d, n, plain)),
    (NAMES[1], |d, n| run(d, n, breaker_prometheus)),
    (NAMES[2], |d, n| run(d, n, too_busy_prometheus)),
    (NAMES[3], |d, n| run(d, n, race_prometheus)),
];

/// `n` calls of `call`, each made in place and polled to completion by `driver`.
#[inline(always)]
fn run<E, F: Future<Output = Result<u64, E>>>(driver: Driver, n: u64, call: impl Fn(u64) -> F) {
    let waker = thread_waker();
    calls(driver, &waker, n, |i| call(black_box(i)));
}

/// Builds the Prometheus recorder and installs it as the global one.
fn install_prometheus() -> PrometheusHandle {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).expect("no recorder was installed before");
    handle
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// ns per call of one sample of `contender` on `driver` and `threads` threads; `round` picks
/// the stack shift. Also returns the calls made.
fn sample(contender: fn(Driver, u64), driver: Driver, threads: usize, round: usize) -> (f64, u64) {
    sample_threads(threads, round, SAMPLE, |timing| {
        current_thread_runtime().block_on(async {
            contender(driver, CHUNK); // warm up; creates the sites, starts this runtime's monitor
            tokio::task::yield_now().await;
            timing
                .timed_async(CHUNK, || async {
                    contender(driver, CHUNK);
                    tokio::task::yield_now().await;
                })
                .await
        })
    })
}

/// Every contender on every driver: the rounds' entry `2 * c + d` is contender `c` on driver
/// `Driver::ALL[d]`.
fn phase(contenders: &[Contender]) -> Rounds {
    rounds(contenders.len() * 2, SAMPLES, |cd, threads, round| {
        sample(contenders[cd / 2].1, Driver::ALL[cd % 2], threads, round)
    })
}

/// The value of the sample line of `series` whose labels include every one of `labels`.
fn scraped(text: &str, series: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| line.starts_with(series) && !line.starts_with('#'))
        .find(|line| {
            line[series.len()..].starts_with('{')
                && labels
                    .iter()
                    .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit_once(' '))
        .and_then(|(_, value)| value.parse().ok())
}

fn measure() {
    let noop = phase(&NOOP);
    let handle = install_prometheus();
    let prometheus = phase(&PROMETHEUS);

    outln!("## Cost per call with the `metrics` feature on\n");
    outln!(
        "ns per call, median of {SAMPLES} samples of {} ms each (every sample made at least {} \
         calls); \"added\" = the attribute minus the plain call in the same phase, \"recorder\" \
         = with the Prometheus recorder minus with none. Calls run inside a current-thread \
         tokio runtime per thread; 2 threads = 2 OS threads calling the same fn (one shared \
         site), time per call as each thread sees it.\n",
        SAMPLE.as_millis(),
        group(noop.fewest_calls.min(prometheus.fewest_calls)),
    );
    // Median ns of contender `c` on driver `d`, `t` threads, in a phase.
    let ns = |rounds: &Rounds, c: usize, d: usize, t: usize| rounds.medians[2 * c + d][t];
    for (d, driver) in Driver::ALL.into_iter().enumerate() {
        for (t, threads) in ["1 thread", "2 threads"].into_iter().enumerate() {
            outln!("### `{}` driver, {threads}\n", driver.name());
            outln!(
                "| contender | no recorder ns/call | added | Prometheus ns/call | added | recorder |"
            );
            outln!("|---|---:|---:|---:|---:|---:|");
            for (c, name) in NAMES.iter().enumerate() {
                let (a, b) = (ns(&noop, c, d, t), ns(&prometheus, c, d, t));
                let added = |ns: f64, base: f64| {
                    if c == 0 {
                        "—".to_string()
                    } else {
                        format!("{:+.1}", ns - base)
                    }
                };
                outln!(
                    "| {name} | {a:.1} | {} | {b:.1} | {} | {:+.1} |",
                    added(a, ns(&noop, 0, d, t)),
                    added(b, ns(&prometheus, 0, d, t)),
                    b - a
                );
            }
            outln!();
        }
    }

    outln!("### Goals, with the Prometheus recorder (medians)\n");
    outln!("| goal | contender | driver | measured | bound | result |");
    outln!("|---|---|---|---:|---:|---|");
    for (d, driver) in Driver::ALL.into_iter().enumerate() {
        for (t, threads) in ["1 thread", "2 threads"].into_iter().enumerate() {
            let added = ns(&prometheus, 1, d, t) - ns(&prometheus, 0, d, t);
            outln!(
                "| a metered closed breaker adds under {GOAL_BREAKER_NS} ns ({threads}) | {} | {} | {added:+.1} ns | < {GOAL_BREAKER_NS} ns | {} |",
                NAMES[1],
                driver.name(),
                pass(added < GOAL_BREAKER_NS)
            );
        }
    }
    for (c, name) in NAMES.iter().enumerate().skip(1) {
        for (d, driver) in Driver::ALL.into_iter().enumerate() {
            let gap = ns(&prometheus, c, d, 1) - ns(&prometheus, c, d, 0);
            outln!(
                "| 2 threads on one site within {GOAL_THREADS_NS} ns of 1 thread | {name} | {} | {gap:+.1} ns | <= {GOAL_THREADS_NS} ns | {} |",
                driver.name(),
                pass(gap <= GOAL_THREADS_NS)
            );
        }
    }
    outln!();

    outln!(
        "A call adds to its thread's stripe of the site's counts (one cache line per stripe, \
         one stripe per thread here), never to the recorder's handles, which the exporter sets \
         from the stripes' sums once per `resiliency::metrics::EXPORT_PERIOD`: one add under \
         `#[breaker]` and `#[too_busy]` (admitted, no `max_in_flight`) and `#[race_retry]` \
         (attempt 1 answered at its first poll, exported as an attempt, a success and a win of \
         attempt 1), with or without a recorder.\n"
    );
    resiliency::metrics::flush();
    let rendered = handle.render();
    let path = |function: &str| format!("{}::{function}", module_path!());
    let counted = [
        scraped(
            &rendered,
            resiliency::metrics::BREAKER_CALLS,
            &[
                ("name", &path("breaker_prometheus")),
                ("outcome", "success"),
            ],
        ),
        scraped(
            &rendered,
            resiliency::metrics::TOO_BUSY_CALLS,
            &[
                ("name", &path("too_busy_prometheus")),
                ("outcome", "admitted"),
            ],
        ),
        scraped(
            &rendered,
            resiliency::metrics::RACE_CALLS,
            &[("name", &path("race_prometheus")), ("outcome", "success")],
        ),
    ];
    let show = |n: Option<f64>| n.map_or_else(|| "none".to_string(), |n| group(n as u64));
    outln!(
        "The Prometheus recorder counted, for the phase-2 sites: {} breaker successes, {} \
         too_busy admissions, {} raced successes ({} series rendered).\n",
        show(counted[0]),
        show(counted[1]),
        show(counted[2]),
        rendered
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count(),
    );
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=<contender number>` (0 = plain, 1 = `#[breaker]`, 2 = `#[too_busy]`,
/// 3 = `#[race_retry]`, each without a recorder; 4 to 7 the same with the Prometheus recorder
/// installed first) runs just that contender for `BENCH_CALLS` calls (default 10M, rounded up to
/// whole chunks) on `BENCH_DRIVER` (`inlined` or `polled`, default `inlined`) on each of
/// `BENCH_THREADS` threads (default 1), in the same setting as the measurement (a current-thread
/// runtime per thread, a yield per chunk), and prints one line: a target for
/// `valgrind --tool=callgrind` or `perf`.
fn profile(which: &str) {
    let n = which
        .parse::<usize>()
        .ok()
        .filter(|&n| n < NOOP.len() + PROMETHEUS.len())
        .expect("BENCH_PROFILE is a contender number from 0 to 7");
    let (name, contender) = if n < NOOP.len() {
        NOOP[n]
    } else {
        let _handle = install_prometheus();
        PROMETHEUS[n - NOOP.len()]
    };
    let recorder = if n < NOOP.len() {
        "no recorder"
    } else {
        "Prometheus recorder"
    };
    let driver = std::env::var("BENCH_DRIVER")
        .ok()
        .map(|name| Driver::parse(&name).expect("BENCH_DRIVER is `inlined` or `polled`"))
        .unwrap_or(Driver::Inlined);
    profile_calls(
        &format!("{name}, {recorder}, {}", driver.name()),
        CHUNK,
        |calls| {
            current_thread_runtime().block_on(async {
                for _ in 0..calls / CHUNK {
                    contender(driver, CHUNK);
                    tokio::task::yield_now().await;
                }
            })
        },
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&which);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `metrics` feature cost benchmark\n");
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
    common::publish_run(
        "metrics_cost",
        "cargo bench -p resiliency-benches --features metrics --bench metrics_cost",
    );
}
