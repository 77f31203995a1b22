//! Tail latency with hedged attempts: `cargo bench -p resiliency-benches --bench race_tail`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`).
//!
//! # The service
//!
//! A simulated service, inside this process: an attempt sleeps (`tokio::time::sleep`) for a time
//! drawn afresh for each attempt, independently of every other: with probability `SLOW_SHARE`
//! (1%) it is slow (`SLOW`, 1 s), otherwise it takes a time drawn uniformly between `FAST_MIN`
//! and `FAST_MAX` (8 to 12 ms); then it answers `Ok`. The draw is deterministic pseudo-random:
//! attempt number `n` of a contender (each counts its own attempts from 0) draws from
//! `splitmix64(SEED + n)`, so every contender meets the same sequence of draws in the order its
//! attempts start. Nothing ever fails: only latency differs.
//!
//! # The contenders
//!
//! * **no hedging**: the call is one attempt.
//! * **tower `Hedge` at p95**: `tower::hedge::Hedge::new(service, policy, 32, 0.95, 1 s)` around a
//!   `tower::service_fn` making one attempt: a policy that clones every request and always
//!   allows the hedge, at least 32 data points (the number `#[race_retry]` waits for before
//!   trusting its percentile), the 95th percentile of the latencies tower recorded in its last
//!   full period of 1 s. Tower sends at most one hedge per call; it records the latency of each
//!   answered leg (in whole ms, rounded up, in an HdrHistogram). `Hedge` is not `Clone` and its
//!   `call` takes `&mut self`, so the calls share one behind a `std::sync::Mutex`, locked only to
//!   call `poll_ready` (always ready here) and `call`; the call's future is then awaited without
//!   the lock.
//! * **ours, `after = "p95"`**: `#[race_retry(retries = 1, after = "p95", total = "5s")]`. It
//!   learns the percentile from every attempt that ended (losers with the time they ran) over its
//!   last 1,024 to 2,048 attempts (a log-linear histogram whose buckets span at most 12.5% of
//!   their values; the percentile is interpolated by rank within its bucket).
//! * **ours, `after = "50ms"`**: `#[race_retry(retries = 1, after = "50ms", total = "5s")]`.
//!
//! Both of ours use `retries = 1` (one hedge at most, as tower), and a `total` that no call
//! comes near (so the deadline never ends a call). Both run with the defaults otherwise: the retry
//! budget (extra attempts at most 10% of the calls) and the backoff after a failure. Nothing fails
//! here, so the backoff never waits; the budget's refusals are printed (none are expected, the
//! hedges being about 1% of the calls).
//!
//! # How calls are driven
//!
//! One current-thread tokio runtime on the main thread, on which the four contenders run **at
//! the same time**, so that whatever disturbs the process (other processes on the machine take
//! its CPU for a few ms now and then) disturbs all four alike. Each contender has `IN_FLIGHT`
//! (100) worker tasks that each make calls one after another (a closed loop: 100 calls in flight
//! at all times). Each call's latency is measured with `tokio::time::Instant` from just before
//! its future is made to its output; attempts are counted per call (each attempt, when it
//! starts, counts itself in its call's task-local record, which also keeps when the second
//! attempt started and which attempt answered). Every contender gets the same warm-up: the
//! calls started in the first `WARMUP` (1.5 s: more than one full period of tower's histogram,
//! and far more than the 32 attempts ours needs) are not measured; the calls started in the next
//! `MEASURE` (8 s) are. A probe task on the same runtime sleeps 1 ms back to back during the
//! measured window and records how late it wakes (how well the thread kept up), and reads the
//! `after` ours (p95) uses at that moment.
//!
//! **Real time, not tokio's paused clock.** Tower's hedge and ours both use tokio's clock
//! (`tokio::time::Instant` and `sleep`: tower's `hedge/latency.rs`, `rotating_histogram.rs`,
//! `delay.rs`), so paused time would be exact for both, but pausing needs tokio's `test-util`
//! feature, which this package's `Cargo.toml` does not enable. So the run is in real time: tokio's
//! timers fire on whole milliseconds (a 10 ms sleep takes 10 to 11 ms), and stalls of the
//! process show in every contender's latencies.
//!
//! # What is printed
//!
//! Per contender: latency p50, p99, p99.9 and max (nearest rank), the **extra load** = attempts /
//! calls - 1 (attempts counted at the service), the share of calls answered by the second
//! attempt, and when the second attempt was sent (median, p99, max over the calls that sent
//! one). Then the goal: ours (`after = "p95"`) cuts p99.9 at least tenfold compared with no
//! hedging, with at most 5% extra load, and has a lower p99.9 than tower's hedge at equal or
//! lower extra load. PASS and MISS compare the measured figures strictly; a last column says
//! whether the difference with tower is within sampling noise (overlapping distribution-free 95%
//! intervals of p99.9; a difference of extra loads within 1.96 binomial standard errors).

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resiliency::race_retry;
use tokio::time::Instant;
use tower::Service;

mod common;
use common::outln;
use common::HedgeAll;
use common::{group, load_average, ms, pass, CallError};

/// Calls in flight at all times.
const IN_FLIGHT: usize = 100;
/// Every contender's warm-up (not measured), then the window in which its calls are measured.
const WARMUP: Duration = Duration::from_millis(1500);
const MEASURE: Duration = Duration::from_secs(8);
/// The service: 1% of attempts take `SLOW`, the others between `FAST_MIN` and `FAST_MAX`.
const SLOW_SHARE: f64 = 0.01;
const SLOW: Duration = Duration::from_secs(1);
const FAST_MIN: Duration = Duration::from_millis(8);
const FAST_MAX: Duration = Duration::from_millis(12);
const SEED: u64 = 0x5EED_7A11_0000_0001;
/// Tower's hedge: its histogram's period, its minimum of data points, its percentile.
const TOWER_PERIOD: Duration = Duration::from_secs(1);
const TOWER_MIN_POINTS: u64 = 32;
const TOWER_PERCENTILE: f32 = 0.95;
/// The goal.
const GOAL_CUT: f64 = 10.0;
const GOAL_EXTRA: f64 = 0.05;

// ---------------------------------------------------------------------------------------------
// The service.

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Attempts started by each contender so far: its next attempt's draw.
static DRAWS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// What one call's attempts record about it (a task-local of the worker making the call).
struct CallRecord {
    contender: Contender,
    start: Instant,
    attempts: Cell<u32>,
    /// When the second attempt started, after the call started.
    second_at: Cell<Option<Duration>>,
}

tokio::task_local! {
    static CALL: CallRecord;
}

/// The time attempt number `n` of a run takes.
fn draw(n: u64) -> Duration {
    let r = splitmix64(SEED.wrapping_add(n));
    // The top 53 bits decide slow or fast, the low 32 bits the fast time.
    let slow = (r >> 11) as f64 / (1u64 << 53) as f64 <= SLOW_SHARE;
    if slow {
        SLOW
    } else {
        let span = (FAST_MAX - FAST_MIN).as_micros() as u64;
        FAST_MIN + Duration::from_micros((r & 0xFFFF_FFFF) % (span + 1))
    }
}

/// One attempt: counts itself in its call, sleeps for its draw, answers which attempt of its
/// call it was.
async fn attempt() -> Result<u32, CallError> {
    let (wait, number) = CALL.with(|call| {
        let wait = draw(DRAWS[call.contender as usize].fetch_add(1, Relaxed));
        let number = call.attempts.get() + 1;
        call.attempts.set(number);
        if number == 2 {
            call.second_at.set(Some(call.start.elapsed()));
        }
        (wait, number)
    });
    tokio::time::sleep(wait).await;
    Ok(number)
}

// ---------------------------------------------------------------------------------------------
// The contenders.

#[race_retry(retries = 1, after = "p95", total = "5s")]
async fn ours_p95(_call: u64) -> Result<u32, CallError> {
    attempt().await
}

#[race_retry(retries = 1, after = "50ms", total = "5s")]
async fn ours_fixed(_call: u64) -> Result<u32, CallError> {
    attempt().await
}

/// The error tower's service returns (never, here).
#[derive(Debug)]
struct Down;

impl std::fmt::Display for Down {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("down")
    }
}

impl std::error::Error for Down {}

/// tower's hedge around a service that makes one attempt per request.
fn tower_hedge() -> impl Service<
    u64,
    Response = u32,
    Error = tower::BoxError,
    Future = impl Future<Output = Result<u32, tower::BoxError>> + Send,
> + Send {
    let service =
        tower::service_fn(|_call: u64| async { attempt().await.map_err(|_: CallError| Down) });
    tower::hedge::Hedge::new(
        service,
        HedgeAll,
        TOWER_MIN_POINTS,
        TOWER_PERCENTILE,
        TOWER_PERIOD,
    )
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Contender {
    NoHedging,
    Tower,
    OursP95,
    OursFixed,
}

const CONTENDERS: [Contender; 4] = [
    Contender::NoHedging,
    Contender::Tower,
    Contender::OursP95,
    Contender::OursFixed,
];

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::NoHedging => "no hedging",
            Contender::Tower => "tower `Hedge`, p95, period 1 s, 32 points",
            Contender::OursP95 => "`#[race_retry(retries = 1, after = \"p95\", total = \"5s\")]`",
            Contender::OursFixed => {
                "`#[race_retry(retries = 1, after = \"50ms\", total = \"5s\")]`"
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Driving and measuring.

/// One measured call.
#[derive(Copy, Clone, Debug)]
struct Call {
    latency: Duration,
    attempts: u32,
    second_at: Option<Duration>,
    /// Which attempt answered (0 if none did).
    answered_by: u32,
}

/// `IN_FLIGHT` workers making calls with `make` from `t0`: calls started before `t0 + WARMUP`
/// warm up (not measured), calls started before `t0 + WARMUP + MEASURE` are measured.
async fn drive<M, F>(contender: Contender, t0: Instant, make: M) -> Vec<Call>
where
    M: Fn(u64) -> F + Clone + Send + 'static,
    F: Future<Output = Result<u32, tower::BoxError>> + Send,
{
    let (warm_until, end) = (t0 + WARMUP, t0 + WARMUP + MEASURE);
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (make, next) = (make.clone(), next.clone());
        workers.spawn(async move {
            let mut calls = Vec::new();
            loop {
                let start = Instant::now();
                if start >= end {
                    break;
                }
                let record = CallRecord {
                    contender,
                    start,
                    attempts: Cell::new(0),
                    second_at: Cell::new(None),
                };
                let future = make(next.fetch_add(1, Relaxed));
                let (output, attempts, second_at) = CALL
                    .scope(record, async move {
                        let output = future.await;
                        let (attempts, second_at) =
                            CALL.with(|r| (r.attempts.get(), r.second_at.get()));
                        (output, attempts, second_at)
                    })
                    .await;
                if start >= warm_until {
                    calls.push(Call {
                        latency: start.elapsed(),
                        attempts,
                        second_at,
                        answered_by: output.unwrap_or(0),
                    });
                }
            }
            calls
        });
    }
    let mut calls = Vec::new();
    while let Some(worker) = workers.join_next().await {
        calls.extend(worker.expect("a worker does not panic"));
    }
    calls
}

/// How late a 1 ms sleep wakes, sampled back to back from `t0 + WARMUP` to the end of the
/// measured window: how well the runtime's thread kept up (other processes, the calls' own work).
/// Also, at each wake, the `after` that ours (p95) would use for a call starting then.
async fn probe(t0: Instant) -> (Vec<Duration>, Vec<Duration>) {
    let (from, end) = (t0 + WARMUP, t0 + WARMUP + MEASURE);
    tokio::time::sleep_until(from).await;
    let ours = resiliency::race_retry::names()
        .into_iter()
        .find(|name| name.ends_with("::ours_p95"));
    let (mut late, mut after) = (Vec::new(), Vec::new());
    while Instant::now() < end {
        let due = Instant::now() + Duration::from_millis(1);
        tokio::time::sleep_until(due).await;
        late.push(Instant::now().saturating_duration_since(due));
        if let Some(stats) = ours.and_then(resiliency::race_retry::stats) {
            after.push(stats.after);
        }
    }
    (late, after)
}

/// The error of a call, for the driver (no call fails here).
fn boxed(error: CallError) -> tower::BoxError {
    format!("{error:?}").into()
}

async fn run(contender: Contender, t0: Instant) -> Vec<Call> {
    match contender {
        Contender::NoHedging => {
            drive(contender, t0, |_| async { attempt().await.map_err(boxed) }).await
        }
        Contender::OursP95 => {
            drive(contender, t0, |i| async move {
                ours_p95(i).await.map_err(boxed)
            })
            .await
        }
        Contender::OursFixed => {
            drive(contender, t0, |i| async move {
                ours_fixed(i).await.map_err(boxed)
            })
            .await
        }
        Contender::Tower => {
            let hedge = Arc::new(Mutex::new(tower_hedge()));
            drive(contender, t0, move |i| {
                let future = {
                    let mut hedge = hedge.lock().unwrap();
                    // Tower's hedge is always ready (its inner services are `service_fn` and a
                    // delay that does not reserve a slot): one poll with a no-op waker says so.
                    let ready = hedge.poll_ready(&mut Context::from_waker(Waker::noop()));
                    assert!(
                        matches!(ready, Poll::Ready(Ok(()))),
                        "tower's hedge is ready"
                    );
                    hedge.call(i)
                };
                future
            })
            .await
        }
    }
}

/// What a contender's measured calls show.
struct Summary {
    p50: Duration,
    p99: Duration,
    p999: Duration,
    /// A distribution-free 95% confidence interval of p99.9 (order statistics).
    p999_ci: (Duration, Duration),
    max: Duration,
    calls: u64,
    extra_attempts: u64,
    extra: f64,
    answered_by_second: f64,
    /// When the second attempt started, over the calls that made one: median, p99, max.
    second_at: Option<[Duration; 3]>,
    failed: u64,
}

/// Nearest rank.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A distribution-free 95% confidence interval of the `q` quantile: the values at the ranks
/// `n q -+ 1.96 sqrt(n q (1 - q))` (the normal approximation of the binomial).
fn interval(sorted: &[Duration], q: f64) -> (Duration, Duration) {
    let n = sorted.len() as f64;
    let spread = 1.96 * (n * q * (1.0 - q)).sqrt();
    let rank = |r: f64| (r.clamp(1.0, n) as usize).clamp(1, sorted.len());
    (
        sorted[rank((n * q - spread).floor()) - 1],
        sorted[rank((n * q + spread).ceil()) - 1],
    )
}

fn summarize(calls: &[Call]) -> Summary {
    let mut latencies: Vec<Duration> = calls.iter().map(|c| c.latency).collect();
    latencies.sort();
    let attempts: u64 = calls.iter().map(|c| u64::from(c.attempts)).sum();
    let mut second: Vec<Duration> = calls.iter().filter_map(|c| c.second_at).collect();
    second.sort();
    let n = calls.len() as f64;
    Summary {
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        p999: percentile(&latencies, 0.999),
        p999_ci: interval(&latencies, 0.999),
        max: *latencies.last().unwrap(),
        calls: calls.len() as u64,
        extra_attempts: attempts - calls.len() as u64,
        extra: attempts as f64 / n - 1.0,
        answered_by_second: calls.iter().filter(|c| c.answered_by == 2).count() as f64 / n,
        second_at: (!second.is_empty()).then(|| {
            [
                percentile(&second, 0.5),
                percentile(&second, 0.99),
                *second.last().unwrap(),
            ]
        }),
        failed: calls.iter().filter(|c| c.answered_by == 0).count() as u64,
    }
}

/// CPU time used by this process so far (user and system).
fn cpu_time() -> Duration {
    // SAFETY: `usage` is a plain struct on the stack, passed by pointer as the call requires.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let started = std::time::Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[race_retry]`: tail latency against hedging\n");
    outln!(
        "{cores} cores available; load average at start: {}.\n",
        load_average()
    );
    outln!(
        "Service: each attempt independently takes {} with probability {}%, else uniformly {}–{} \
         ms (tokio sleep). The four contenders run at the same time on one current-thread \
         runtime, each with {IN_FLIGHT} calls in flight (closed loop): {} s of warm-up, then \
         the calls started in the next {} s are measured. Real time (tokio's paused clock needs \
         its `test-util` feature, not enabled for this package).\n",
        ms(SLOW),
        SLOW_SHARE * 100.0,
        FAST_MIN.as_millis(),
        FAST_MAX.as_millis(),
        WARMUP.as_secs_f64(),
        MEASURE.as_secs_f64(),
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds");
    let cpu_before = cpu_time();
    let wall = std::time::Instant::now();
    let (results, (late, after)) = runtime.block_on(async {
        let t0 = Instant::now();
        let runs = CONTENDERS.map(|c| tokio::spawn(run(c, t0)));
        let late = probe(t0).await;
        let mut results = Vec::new();
        for (contender, run) in CONTENDERS.into_iter().zip(runs) {
            let calls = run.await.expect("a contender's run does not panic");
            results.push((contender, summarize(&calls)));
        }
        (results, late)
    });
    let (wall, cpu) = (wall.elapsed(), cpu_time() - cpu_before);

    outln!(
        "| contender | calls | p50 | p99 | p99.9 | max | extra load | answered by the 2nd attempt | \
         2nd attempt sent after: median / p99 / max | failed |"
    );
    outln!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (contender, s) in &results {
        outln!(
            "| {} | {} | {} | {} | {} | {} | {:.2}% | {:.2}% | {} | {} |",
            contender.name(),
            group(s.calls),
            ms(s.p50),
            ms(s.p99),
            ms(s.p999),
            ms(s.max),
            100.0 * s.extra,
            100.0 * s.answered_by_second,
            s.second_at.map_or("—".into(), |[m, p, x]| format!(
                "{} / {} / {}",
                ms(m),
                ms(p),
                ms(x)
            )),
            s.failed,
        );
    }
    let (mut late, mut after) = (late, after);
    late.sort();
    after.sort();
    outln!(
        "\nRun: {:.1} s of wall time, {:.1} s of CPU used by this process. How late the runtime \
         woke a 1 ms sleep during the measured window ({} samples): median {}, p99 {}, max {} \
         (every contender's calls ran on this same thread at the same time).",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        late.len(),
        ms(percentile(&late, 0.5)),
        ms(percentile(&late, 0.99)),
        ms(*late.last().unwrap()),
    );
    for (contender, suffix) in [
        (Contender::OursP95, "::ours_p95"),
        (Contender::OursFixed, "::ours_fixed"),
    ] {
        let stats = resiliency::race_retry::names()
            .into_iter()
            .find(|name| name.ends_with(suffix))
            .and_then(resiliency::race_retry::stats);
        if let Some(s) = stats {
            outln!(
                "\n{} (warm-up included): `resiliency::race_retry::stats` counts {} extra attempts, {} \
                 won by them, {} refused by the budget, {} deadlines.",
                contender.name(),
                s.extra_attempts,
                s.won_by_extra,
                s.budget_refused,
                s.deadlines,
            );
        }
    }
    if !after.is_empty() {
        outln!(
            "\nOurs (p95): the `after` it used during the measured window (read at each probe \
             wake): min {}, median {}, p99 {}, max {}; above 20 ms {:.1}% of the time.",
            ms(after[0]),
            ms(percentile(&after, 0.5)),
            ms(percentile(&after, 0.99)),
            ms(*after.last().unwrap()),
            100.0
                * after
                    .iter()
                    .filter(|a| **a > Duration::from_millis(20))
                    .count() as f64
                / after.len() as f64,
        );
    }

    let get = |c: Contender| &results.iter().find(|r| r.0 == c).unwrap().1;
    let (none, tower, ours, fixed) = (
        get(Contender::NoHedging),
        get(Contender::Tower),
        get(Contender::OursP95),
        get(Contender::OursFixed),
    );
    let cut = |s: &Summary| none.p999.as_secs_f64() / s.p999.as_secs_f64();
    // Sampling noise of the comparisons with tower: do the p99.9 intervals overlap, and is the
    // difference of extra loads within 1.96 standard errors (binomial)?
    let overlap = ours.p999_ci.0 <= tower.p999_ci.1 && tower.p999_ci.0 <= ours.p999_ci.1;
    let se = |s: &Summary| s.extra * (1.0 - s.extra).max(0.0) / s.calls as f64;
    let extra_noise = 1.96 * (se(ours) + se(tower)).sqrt();
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    outln!("\n### Goal\n");
    outln!("| measure | measured | goal | result | within sampling noise |");
    outln!("|---|---:|---:|---|---|");
    for (label, s) in [("ours (p95)", ours), ("ours (50 ms)", fixed)] {
        outln!(
            "| {label}: p99.9 cut vs no hedging | {} / {} = {:.1}x | >= {GOAL_CUT}x | {} | |",
            ms(none.p999),
            ms(s.p999),
            cut(s),
            pass(cut(s) >= GOAL_CUT)
        );
        outln!(
            "| {label}: extra load | {:.3}% | <= {:.0}% | {} | |",
            100.0 * s.extra,
            100.0 * GOAL_EXTRA,
            pass(s.extra <= GOAL_EXTRA)
        );
    }
    outln!(
        "| ours (p95) vs tower (p95): p99.9 | {} vs {} | lower | {} | {} (95% intervals {}–{} vs \
         {}–{}) |",
        ms(ours.p999),
        ms(tower.p999),
        pass(ours.p999 < tower.p999),
        yes_no(overlap),
        ms(ours.p999_ci.0),
        ms(ours.p999_ci.1),
        ms(tower.p999_ci.0),
        ms(tower.p999_ci.1),
    );
    outln!(
        "| ours (p95) vs tower (p95): extra load | {:.3}% ({} / {}) vs {:.3}% ({} / {}) | equal \
         or lower | {} | {} (difference {:+.3} points, noise ±{:.3}) |",
        100.0 * ours.extra,
        group(ours.extra_attempts),
        group(ours.calls),
        100.0 * tower.extra,
        group(tower.extra_attempts),
        group(tower.calls),
        pass(ours.extra <= tower.extra),
        yes_no((ours.extra - tower.extra).abs() <= extra_noise),
        100.0 * (ours.extra - tower.extra),
        100.0 * extra_noise,
    );
    outln!(
        "\np99.9 is the call ranked {} in {} for no hedging, {} in {} for ours (p95).",
        group((0.999 * none.calls as f64).ceil() as u64),
        group(none.calls),
        group((0.999 * ours.calls as f64).ceil() as u64),
        group(ours.calls),
    );
    outln!(
        "\nWhole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish("race_tail");
}
