//! The cost of `resiliency`'s tower layers per request, against their tower peers:
//! `cargo bench -p resiliency-benches --features tower --bench tower_layers`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish_run`): the ns per
//! request of a trivial `tower::service_fn` (ready at once, answers `Ok(request)`) called bare and
//! wrapped in one layer, on 1 thread and on 2 OS threads calling clones of one shared layered
//! service (so that a shared breaker, guard, semaphore or latency record is contended):
//!
//! * **Breaker**: ours (`resiliency::tower::BreakerLayer`, count rule, closed) against
//!   `tower-resilience-circuitbreaker` (`CircuitBreakerLayer::builder().build()`, its defaults:
//!   a count-based window of 100 calls, closed).
//! * **Load shedding**: ours (`resiliency::tower::TooBusyLayer`, once with
//!   `max_in_flight = 1_000_000` so that it never refuses, once with the default lag signal)
//!   against tower's usual shedding stack, `ServiceBuilder::new().load_shed().concurrency_limit(N)`
//!   with the same `N = 1_000_000` (never full, so never shedding).
//! * **Raced retries**: ours (`resiliency::tower::RaceRetryLayer`, `retries = 1`, `after` the p95
//!   of recent latencies, `total = 450 ms`; the first attempt answers at once) against tower's
//!   `Hedge` set alike (one hedge at most, after the p95 of the last full period of 1 s, at least
//!   32 data points, every request cloned). `Hedge` is not `Clone`, so its threads share one
//!   behind a `std::sync::Mutex` taken by each `poll_ready` and `call` (never across an await): on
//!   1 thread that lock is uncontended and a small part of its figure; on 2 threads the lock's
//!   contention is part of what sharing one hedge costs.
//!
//! "added" is a contender's figure minus the bare service's figure for the same thread count, in
//! the same run. The goal, per pair and thread count: ours adds at most half of what the fastest
//! peer layer of that pair adds (medians).
//!
//! # How requests are driven
//!
//! Every contender is driven the same way, as a tower service is by its caller: a loop of
//! `ServiceExt::ready(&mut service).await` then `call(request).await`, the call's future made
//! and awaited in place (never spawned), inside the `block_on` of a current-thread tokio runtime
//! (time driver on) that each worker thread builds for itself. Between two chunks of `CHUNK`
//! requests the worker yields to its runtime (`tokio::task::yield_now`), so that the timers living
//! on it (the lag monitor of `TooBusyLayer`'s default signal) fire as in a server; the bare service
//! runs in exactly the same setting, so the runtime's share cancels out of "added". When a
//! service's readiness or call is `Pending` (a contended `tokio::sync::Mutex` in
//! tower-resilience, a budget exhausted by tokio's cooperative scheduling), the runtime parks the
//! thread until it is woken, as a server's worker would. Each worker thread clones the contender's
//! one prototype service (built on the unpinned main thread before sampling, and called once
//! there), so clones share the layer's state. Requests answered with an error are counted and
//! printed: none of the layers may refuse here.
//!
//! # How time is measured
//!
//! As in `too_busy_cost.rs`: a sample runs a contender for `SAMPLE` in chunks of `CHUNK`
//! requests on threads pinned to their own CPUs (stacks shifted between rounds), and divides the
//! time by the requests made; with 2 threads both start at a barrier and stop at one flag, and the
//! figure is the mean of the two threads' time per request. Samples are taken round-robin over
//! the contenders (`SAMPLES` rounds, `common::rounds`); the tables and the goal use medians.
//!
//! `BENCH_PROFILE=<contender>` runs one contender alone, for `valgrind --tool=callgrind`: see
//! [`profile`].

use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower::{BoxError, Service, ServiceBuilder, ServiceExt as _};

mod common;
use common::outln;
use common::{crate_version, HedgeAll};
use common::{
    current_thread_runtime, group, load_average, pass, profile_calls, rounds, sample_threads,
    Rounds,
};

/// How long one sample runs each contender.
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the median is reported.
const SAMPLES: usize = 9;
/// Requests between two looks at the stop flag (and two yields to the runtime).
const CHUNK: u64 = 4096;
/// The in-flight limit of both shedding contenders: far above anything reached, so neither
/// refuses.
const MAX_IN_FLIGHT: usize = 1_000_000;
/// The goal: ours adds at most this share of the fastest peer layer's added cost.
const GOAL_SHARE: f64 = 0.5;
/// The race's deadline (never reached: the first attempt answers at once).
const RACE_TOTAL: Duration = Duration::from_millis(450);
const THREADS: [usize; 2] = [1, 2];

// ---------------------------------------------------------------------------------------------
// The service under test.

/// The wrapped service's answer: ready at once, `Ok(request)`.
async fn answer(request: u64) -> Result<u64, BoxError> {
    Ok(request)
}

/// The bare service: `tower::service_fn(answer)`.
fn bare() -> impl Service<u64, Response = u64, Error = BoxError, Future: Send> + Clone + Send {
    tower::service_fn(answer)
}

/// `n` requests `from..from + n` through `service` (`ready().await`, then `call().await`): the
/// number answered with an error.
#[inline(always)]
async fn requests<S>(service: &mut S, from: u64, n: u64) -> u64
where
    S: Service<u64, Response = u64>,
{
    let mut errors = 0;
    for request in from..from + n {
        let answered = match service.ready().await {
            Ok(ready) => ready.call(black_box(request)).await,
            Err(e) => Err(e),
        };
        if black_box(answered).is_err() {
            errors += 1;
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------------
// Contenders.

/// Which comparison a contender belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The bare service, the baseline of "added".
    Bare,
    /// One of ours, in the pair named.
    Ours(&'static str),
    /// A peer layer, in the pair named.
    Peer(&'static str),
}

/// A contender, whatever its service's type.
trait Measured: Sync {
    /// One sample on `threads` threads (stack shift `round`): ns per request, requests made, and
    /// requests answered with an error.
    fn sample(&self, threads: usize, round: usize) -> (f64, u64, u64);
    /// `BENCH_PROFILE`: `calls` requests on each of the threads of `common::profile_calls`.
    fn profile(&self, name: &str);
    /// One request on this thread, on a runtime of its own: builds what the layer builds lazily.
    fn touch(&self);
    /// The size of the service's response future (what `call` returns), in bytes.
    fn future_size(&self) -> usize;
}

struct Contender {
    name: String,
    role: Role,
    measured: Box<dyn Measured>,
}

/// One prototype service; each worker thread drives a clone of it.
struct Prototype<S>(Mutex<S>);

impl<S> Prototype<S>
where
    S: Service<u64, Response = u64> + Clone + Send,
{
    fn clone_service(&self) -> S {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl<S> Measured for Prototype<S>
where
    S: Service<u64, Response = u64> + Clone + Send,
{
    fn sample(&self, threads: usize, round: usize) -> (f64, u64, u64) {
        let errors = AtomicU64::new(0);
        let (ns, calls) = sample_threads(threads, round, SAMPLE, |timing| {
            // The service moves out for a chunk and back after it (`timed_async`'s closure can
            // lend nothing to the future it makes).
            let service = Cell::new(Some(self.clone_service()));
            let failed = Cell::new(0);
            let next = Cell::new(0);
            let chunk = || async {
                let mut held = service.take().expect("one chunk at a time");
                let from = next.get();
                next.set(from + CHUNK);
                failed.set(failed.get() + requests(&mut held, from, CHUNK).await);
                service.set(Some(held));
            };
            let timed = current_thread_runtime().block_on(async {
                chunk().await; // warm up; starts this runtime's lag monitor if the layer has one
                tokio::task::yield_now().await;
                failed.set(0);
                timing
                    .timed_async(CHUNK, || async {
                        chunk().await;
                        tokio::task::yield_now().await; // the runtime's timers may fire
                    })
                    .await
            });
            errors.fetch_add(failed.get(), Relaxed);
            timed
        });
        (ns, calls, errors.into_inner())
    }

    fn profile(&self, name: &str) {
        profile_calls(name, CHUNK, |calls| {
            let mut service = self.clone_service();
            current_thread_runtime().block_on(async {
                for k in 0..calls / CHUNK {
                    requests(&mut service, k * CHUNK, CHUNK).await;
                    tokio::task::yield_now().await;
                }
            })
        });
    }

    fn touch(&self) {
        let mut service = self.clone_service();
        current_thread_runtime().block_on(requests(&mut service, 0, 1));
    }

    fn future_size(&self) -> usize {
        std::mem::size_of::<S::Future>()
    }
}

fn contender<S>(name: String, role: Role, service: S) -> Contender
where
    S: Service<u64, Response = u64> + Clone + Send + 'static,
{
    Contender {
        name,
        role,
        measured: Box::new(Prototype(Mutex::new(service))),
    }
}

const BREAKER: &str = "breaker";
const SHEDDING: &str = "load shedding";
const RACE: &str = "raced retries";

fn contenders(lock: &str) -> Vec<Contender> {
    let version = |name: &str| crate_version(lock, name);
    let mut all = vec![contender("bare `service_fn`".into(), Role::Bare, bare())];

    // Breakers.
    all.extend(ours_breaker());
    // tower-resilience: its defaults (count-based window of 100 calls, failure rate 50%). Clones
    // of the service share one circuit.
    let layer = tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .expect("default tower-resilience options are valid");
    all.push(contender(
        format!(
            "tower-resilience-circuitbreaker {} (`CircuitBreakerLayer`, defaults)",
            version("tower-resilience-circuitbreaker")
        ),
        Role::Peer(BREAKER),
        ServiceBuilder::new().layer(layer).service(bare()),
    ));

    // Load shedding.
    all.extend(ours_shedding());
    // tower's usual shedding stack: `load_shed` answers at once with `Overloaded` when the
    // concurrency limit below it is not ready. Clones share the limit's semaphore.
    all.push(contender(
        format!(
            "tower {} `load_shed().concurrency_limit({})`",
            version("tower"),
            group(MAX_IN_FLIGHT as u64)
        ),
        Role::Peer(SHEDDING),
        ServiceBuilder::new()
            .load_shed()
            .concurrency_limit(MAX_IN_FLIGHT)
            .service(bare()),
    ));
    // Raced retries.
    all.extend(ours_race());
    // tower's hedge: its usual settings (p95 of the last full period of 1 s, at least 32 data
    // points), every request cloned. `Hedge` is not `Clone`: threads share one behind a `Mutex`.
    all.push(contender(
        format!(
            "tower {} `Hedge` (p95, 32 points, period 1 s), shared behind a `Mutex`",
            version("tower")
        ),
        Role::Peer(RACE),
        Locked::new(tower::hedge::Hedge::new(
            bare(),
            HedgeAll,
            32,
            0.95,
            Duration::from_secs(1),
        )),
    ));
    all
}

/// A service that is not `Clone`, shared: each `poll_ready` and `call` takes the lock (never held
/// across an await).
struct Locked<S>(Arc<Mutex<S>>);

impl<S> Locked<S> {
    fn new(service: S) -> Self {
        Locked(Arc::new(Mutex::new(service)))
    }
}

impl<S> Clone for Locked<S> {
    fn clone(&self) -> Self {
        Locked(self.0.clone())
    }
}

impl<S: Service<R>, R> Service<R> for Locked<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .call(request)
    }
}

/// Ours: `resiliency::tower::RaceRetryLayer` (the first attempt answers at once), set as tower's
/// hedge is: one extra attempt at most, after the p95 of recent latencies.
fn ours_race() -> Vec<Contender> {
    use resiliency::race_retry::{After, RaceRetry};
    let layer = resiliency::tower::RaceRetryLayer::new(
        RaceRetry::builder("tower_layers.race")
            .retries(1)
            .after(After::Percentile(0.95))
            .total(RACE_TOTAL),
    )
    .expect("valid race options");
    vec![contender(
        format!(
            "`RaceRetryLayer` (retries = 1, after = p95, total = {} ms)",
            RACE_TOTAL.as_millis()
        ),
        Role::Ours(RACE),
        ServiceBuilder::new().layer(layer).service(bare()),
    )]
}

/// Ours: `resiliency::tower::BreakerLayer` (count rule, closed).
fn ours_breaker() -> Vec<Contender> {
    let layer =
        resiliency::tower::BreakerLayer::new(resiliency::Breaker::builder("tower_layers.breaker"))
            .expect("valid options");
    vec![contender(
        "`BreakerLayer` (count rule, defaults)".into(),
        Role::Ours(BREAKER),
        ServiceBuilder::new().layer(layer).service(bare()),
    )]
}

/// Ours: `resiliency::tower::TooBusyLayer`, never refusing (`max_in_flight`), and on its default
/// lag signal.
fn ours_shedding() -> Vec<Contender> {
    use resiliency::too_busy::TooBusy;
    let in_flight = resiliency::tower::TooBusyLayer::new(
        TooBusy::builder("tower_layers.in_flight").max_in_flight(MAX_IN_FLIGHT as u32),
    )
    .expect("a valid max_in_flight");
    let lag = resiliency::tower::TooBusyLayer::new(TooBusy::builder("tower_layers.lag"))
        .expect("the defaults are valid");
    vec![
        contender(
            format!(
                "`TooBusyLayer` (`max_in_flight = {}`)",
                group(MAX_IN_FLIGHT as u64)
            ),
            Role::Ours(SHEDDING),
            ServiceBuilder::new().layer(in_flight).service(bare()),
        ),
        contender(
            format!(
                "`TooBusyLayer` (defaults: lag, max_lag {} ms)",
                lag.guard()
                    .lag_limit()
                    .unwrap_or_else(resiliency::too_busy::max_lag)
                    .as_millis()
            ),
            Role::Ours(SHEDDING),
            ServiceBuilder::new().layer(lag).service(bare()),
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Measuring.

fn measure(lock: &str) {
    let all = contenders(lock);
    // One request each from this (unpinned) thread first, so that whatever a layer builds lazily
    // is built here, not by a pinned worker.
    for contender in &all {
        contender.measured.touch();
    }
    let mut errors = vec![0u64; all.len()];
    let lag_samples_before = LAG_SAMPLES.load(Relaxed);
    let Rounds {
        medians,
        fewest_calls,
        ..
    } = rounds(all.len(), SAMPLES, |c, threads, round| {
        let (ns, calls, failed) = all[c].measured.sample(threads, round);
        errors[c] += failed;
        (ns, calls)
    });

    outln!("## Added cost per request of one layer\n");
    outln!(
        "ns per request, median of {SAMPLES} samples of {} ms each (every sample made at least {} \
         requests); \"added\" = contender minus the bare `service_fn` in the same run. Each \
         request is `ready().await` then `call(request).await` inside a current-thread tokio \
         runtime per thread; 2 threads = 2 OS threads calling clones of one layered service \
         (one shared breaker, guard, semaphore or latency record), time per request as each \
         thread sees it; \"response future\" = the size of the future `call` returns.\n",
        SAMPLE.as_millis(),
        group(fewest_calls),
    );
    for (t, threads) in ["1 thread", "2 threads"].into_iter().enumerate() {
        outln!("### {threads}\n");
        outln!("| contender | ns/request | added vs bare | response future |");
        outln!("|---|---:|---:|---:|");
        for (c, contender) in all.iter().enumerate() {
            let added = if contender.role == Role::Bare {
                "—".to_string()
            } else {
                format!("{:+.1}", medians[c][t] - medians[0][t])
            };
            outln!(
                "| {} | {:.1} | {added} | {} B |",
                contender.name,
                medians[c][t],
                contender.measured.future_size()
            );
        }
        outln!();
    }
    let lag_samples = LAG_SAMPLES.load(Relaxed) - lag_samples_before;
    outln!(
        "Lag monitors took {} samples while contenders were measured (a monitor samples every {} \
         ms on each runtime that a lag-guarded request started it on){}.\n",
        group(lag_samples),
        resiliency::too_busy::interval().as_millis(),
        if lag_samples > 0 {
            ", so the lag signal was live"
        } else {
            ""
        },
    );
    let refused: u64 = errors.iter().sum();
    outln!(
        "Requests answered with an error during all samples: {} (every layer closed, under its \
         limit, or admitting).\n",
        group(refused)
    );

    outln!(
        "### Goal: ours adds at most {} of the fastest peer layer's cost (medians)\n",
        if GOAL_SHARE == 0.5 {
            "half".to_string()
        } else {
            format!("{GOAL_SHARE}")
        }
    );
    outln!("| pair | ours | threads | ours added | fastest peer | its added | limit | result |");
    outln!("|---|---|---:|---:|---|---:|---:|---|");
    let mut pairs = 0;
    for (c, contender) in all.iter().enumerate() {
        let Role::Ours(pair) = contender.role else {
            continue;
        };
        for (t, &threads) in THREADS.iter().enumerate() {
            let added = |i: usize| medians[i][t] - medians[0][t];
            let Some(peer) = (0..all.len())
                .filter(|&p| all[p].role == Role::Peer(pair))
                .min_by(|&a, &b| added(a).total_cmp(&added(b)))
            else {
                continue;
            };
            let limit = added(peer) * GOAL_SHARE;
            pairs += 1;
            outln!(
                "| {pair} | {} | {threads} | {:+.1} | {} | {:+.1} | {limit:.1} | {} |",
                contender.name,
                added(c),
                all[peer].name,
                added(peer),
                pass(added(c) <= limit)
            );
        }
    }
    if pairs == 0 {
        outln!("| — | none of ours measured | — | — | — | — | — | — |");
    }
    outln!();
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=<contender number>` (in table order, 0 = the bare service) runs just that
/// contender for `BENCH_CALLS` requests (default 10M, rounded up to whole chunks) on each of
/// `BENCH_THREADS` threads (default 1) calling clones of one service, in the same setting as the
/// measurement (a current-thread runtime per thread, a yield per chunk), and prints one line: a
/// target for `valgrind --tool=callgrind` or `perf`. `BENCH_PROFILE=list` prints the numbers.
fn profile(lock: &str, which: &str) {
    let all = contenders(lock);
    if which == "list" {
        for (c, contender) in all.iter().enumerate() {
            eprintln!("{c}: {}", contender.name);
        }
        return;
    }
    let contender = which
        .parse::<usize>()
        .ok()
        .and_then(|c| all.get(c))
        .unwrap_or_else(|| {
            panic!(
                "BENCH_PROFILE is a contender number from 0 to {} (or `list`)",
                all.len() - 1
            )
        });
    contender.measured.touch();
    contender.measured.profile(&contender.name);
}

/// Lag samples taken by all monitors so far (counted by an `on_lag` callback at threshold 0).
static LAG_SAMPLES: AtomicU64 = AtomicU64::new(0);

fn main() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default();
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&lock, &which);
    }
    resiliency::too_busy::on_lag(Duration::ZERO, |_| {
        LAG_SAMPLES.fetch_add(1, Relaxed);
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency tower layers cost benchmark\n");
    outln!(
        "{cores} cores available; load average at start: {}.\n",
        load_average()
    );
    let started = Instant::now();
    measure(&lock);
    outln!(
        "Whole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish_run(
        "tower_layers",
        "cargo bench -p resiliency-benches --features tower --bench tower_layers",
    );
}
