//! The retry budget and the backoff in an outage: `cargo bench -p resiliency-benches --bench
//! race_outage`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`).
//!
//! # The service
//!
//! A simulated service, inside this process. While it is healthy an attempt sleeps 10 ms
//! (`tokio::time::sleep`) and answers `Ok`; in the outage every attempt sleeps 50 ms and fails
//! (`Err`): a slow failure, each of which makes a raced call start its next attempt (after a
//! backoff, unless `backoff = "off"`).
//!
//! # The contenders
//!
//! The same call, `#[race_retry(retries = 2, after = "150ms", total = "450ms")]`, three ways:
//!
//! * **the defaults**: a retry budget of 10% (extra attempts may add 10% of the calls; at most 100
//!   tokens banked; a floor of 10 per second, in bursts of at most 10, that makes up only for
//!   deposits slower than that), and a backoff after each failure (a wait uniform in
//!   [0, 37.5 ms), then [0, 75 ms): a quarter of `after`, doubling).
//! * **`budget = "off"`**: the backoff alone.
//! * **`budget = "off", backoff = "off"`**: every extra attempt, each at once after the failure
//!   before it.
//!
//! Each is its own fn, so each has its own budget.
//!
//! # The load
//!
//! Open loop, the same for all, all at the same time on one current-thread tokio runtime: call
//! `i` starts at `t0 + i / RATE` (500 calls per second) in its own task, whatever happened to
//! earlier calls. First `HEALTHY_CALLS` (1,000, 2 s) while the service is healthy: enough deposits
//! (1,000 x 0.1 = 100 tokens) to fill the budget's bank, the worst case for the outage that
//! follows. Then `OUTAGE_CALLS` (2,000, 4 s) in the outage; only those are counted below.
//! Whether a call meets the outage is decided when it starts (an argument of the call).
//!
//! # What is counted, and how
//!
//! Attempts are counted twice: at the service (a counter per contender, bumped when an attempt
//! starts) and by `resiliency::race_retry::observe` around each call (every attempt, with when it
//! started), which also gives the per-window timeline; `resiliency::race_retry::stats` gives the budget's
//! refusals. The **extra load** is extra attempts / calls. The goal: with the defaults, the extra
//! attempts of the outage stay within what the default budget allows: `0.1 x calls` (the share),
//! plus a full bank (100), plus the floor. The floor (`budget.rs`) grants 10 a second only while the
//! deposits come slower than that, in bursts of at most 10: here the deposits bring
//! `0.1 x 500 = 50` tokens a second, so it adds its first burst only (10); were they slower, it
//! would add `10 x (T + 1)` over an outage of `T` seconds (from its first call's start to its last
//! call's end). The share of the steady state (after the first window, once the bank is spent) is
//! printed too: it should be the budget's 10%.
//!
//! Real time: tokio's paused clock would make this exact and fast, but it needs tokio's
//! `test-util` feature, which this package's `Cargo.toml` does not enable. The budget's floor
//! counts time with tokio's clock, so the figures depend on the real duration, which is printed.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use resiliency::race_retry;
use resiliency::race_retry::{observe, Attempt, RaceRetryStats};
use tokio::time::Instant;

mod common;
use common::outln;
use common::{group, load_average, ms, pass, CallError};

/// Calls per second, open loop.
const RATE: f64 = 500.0;
const HEALTHY_CALLS: u64 = 1_000;
const OUTAGE_CALLS: u64 = 2_000;
/// What an attempt takes when the service is healthy, and in the outage (where it fails).
const HEALTHY: Duration = Duration::from_millis(10);
const FAILING: Duration = Duration::from_millis(50);
/// The budget, and what the runtime documents around it: a floor of extra attempts per second,
/// and the most tokens banked.
const SHARE: f64 = 0.1;
const FLOOR_PER_SEC: f64 = 10.0;
const MAX_BANKED: f64 = 100.0;
/// The timeline's window.
const WINDOW: Duration = Duration::from_millis(500);

// ---------------------------------------------------------------------------------------------
// The service and the contenders.

/// The contenders: the defaults, `budget = "off"`, and `budget = "off", backoff = "off"`.
const CONTENDERS: usize = 3;
/// The one with the default budget (whose goal is checked).
const DEFAULTS: usize = 0;

/// Attempts that started in the outage, per contender.
static OUTAGE_ATTEMPTS: [AtomicU64; CONTENDERS] = [const { AtomicU64::new(0) }; CONTENDERS];

async fn attempt(down: bool, contender: usize) -> Result<(), CallError> {
    if down {
        OUTAGE_ATTEMPTS[contender].fetch_add(1, Relaxed);
        tokio::time::sleep(FAILING).await;
        Err(CallError::Down)
    } else {
        tokio::time::sleep(HEALTHY).await;
        Ok(())
    }
}

#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn defaults(down: bool) -> Result<(), CallError> {
    attempt(down, 0).await
}

#[race_retry(retries = 2, after = "150ms", total = "450ms", budget = "off")]
async fn budget_off(down: bool) -> Result<(), CallError> {
    attempt(down, 1).await
}

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "450ms",
    budget = "off",
    backoff = "off"
)]
async fn both_off(down: bool) -> Result<(), CallError> {
    attempt(down, 2).await
}

const NAMES: [&str; CONTENDERS] = [
    "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]` (the defaults: budget 10%, backoff)",
    "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\", budget = \"off\")]`",
    "`#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\", budget = \"off\", backoff = \"off\")]`",
];
/// Short names, for the timeline's columns.
const SHORT: [&str; CONTENDERS] = ["the defaults", "budget off", "budget and backoff off"];
const SUFFIXES: [&str; CONTENDERS] = ["::defaults", "::budget_off", "::both_off"];

fn stats(contender: usize) -> RaceRetryStats {
    resiliency::race_retry::names()
        .into_iter()
        .find(|name| name.ends_with(SUFFIXES[contender]))
        .and_then(resiliency::race_retry::stats)
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The load.

/// One call of the outage.
struct Call {
    /// When it started, after the outage's first call started.
    at: Duration,
    latency: Duration,
    ok: bool,
    attempts: Vec<Attempt>,
}

/// What one contender's run measured.
struct Run {
    calls: Vec<Call>,
    /// `stats` when the outage began, and after its last call.
    before: RaceRetryStats,
    after: RaceRetryStats,
    /// From the outage's first call's start to its last call's end.
    outage: Duration,
    /// How late the generator started calls, max.
    late_max: Duration,
}

/// The open-loop load against `contender`.
async fn run(contender: usize) -> Run {
    let period = Duration::from_secs_f64(1.0 / RATE);
    let t0 = Instant::now();
    let outage_t0 = t0 + period * HEALTHY_CALLS as u32;
    let mut tasks = tokio::task::JoinSet::new();
    let mut late_max = Duration::ZERO;
    let mut before = None;
    for i in 0..HEALTHY_CALLS + OUTAGE_CALLS {
        let due = t0 + period * i as u32;
        tokio::time::sleep_until(due).await;
        late_max = late_max.max(due.elapsed());
        let down = i >= HEALTHY_CALLS;
        if down && before.is_none() {
            before = Some(stats(contender));
        }
        tasks.spawn(async move {
            let start = Instant::now();
            let (output, attempts) = match contender {
                0 => observe(defaults(down)).await,
                1 => observe(budget_off(down)).await,
                _ => observe(both_off(down)).await,
            };
            let end = Instant::now();
            down.then(|| {
                (
                    Call {
                        at: start.saturating_duration_since(outage_t0),
                        latency: end - start,
                        ok: output.is_ok(),
                        attempts,
                    },
                    end,
                )
            })
        });
    }
    let mut calls = Vec::new();
    let mut last_end = outage_t0;
    while let Some(call) = tasks.join_next().await {
        if let Some((call, end)) = call.expect("a call does not panic") {
            last_end = last_end.max(end);
            calls.push(call);
        }
    }
    calls.sort_by_key(|c| c.at);
    Run {
        calls,
        before: before.expect("the outage began"),
        after: stats(contender),
        outage: last_end - outage_t0,
        late_max,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let started = std::time::Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[race_retry]`: the retry budget and the backoff in an outage\n");
    outln!(
        "{cores} cores available; load average at start: {}.\n",
        load_average()
    );
    outln!(
        "Open loop at {RATE} calls/s, all contenders at the same time: {} calls while the service \
         answers in {} ms (filling the bank), then {} calls while every attempt fails after {} ms. \
         Real time (tokio's paused clock needs its `test-util` feature, not enabled for this \
         package). Figures below are for the outage's calls only.\n",
        group(HEALTHY_CALLS),
        HEALTHY.as_millis(),
        group(OUTAGE_CALLS),
        FAILING.as_millis(),
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds");
    let runs: Vec<Run> = runtime.block_on(async {
        let tasks: Vec<_> = (0..CONTENDERS).map(|c| tokio::spawn(run(c))).collect();
        let mut runs = Vec::new();
        for task in tasks {
            runs.push(task.await.expect("no panic"));
        }
        runs
    });

    outln!(
        "| contender | calls | attempts (service / observed) | attempts per call | extra attempts \
         | extra load | budget refused | bank at the outage's start | calls failed | latency p50 / \
         p99 / max | outage lasted |"
    );
    outln!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (c, r) in runs.iter().enumerate() {
        let budgeted = c == DEFAULTS;
        let calls = r.calls.len() as u64;
        let observed: u64 = r.calls.iter().map(|c| c.attempts.len() as u64).sum();
        let service = OUTAGE_ATTEMPTS[c].load(Relaxed);
        let extra = service - calls;
        let mut latencies: Vec<Duration> = r.calls.iter().map(|c| c.latency).collect();
        latencies.sort();
        outln!(
            "| {} | {} | {} / {} | {:.3} | {} | {:.1}% | {} | {} | {} | {} / {} / {} | {:.2} s |",
            NAMES[c],
            group(calls),
            group(service),
            group(observed),
            service as f64 / calls as f64,
            group(extra),
            100.0 * extra as f64 / calls as f64,
            if budgeted {
                group(r.after.budget_refused - r.before.budget_refused)
            } else {
                "—".to_string()
            },
            if budgeted {
                format!("{:.1} tokens", r.before.budget_balance)
            } else {
                "—".to_string()
            },
            group(r.calls.iter().filter(|c| !c.ok).count() as u64),
            ms(latencies[latencies.len() / 2]),
            ms(latencies[(latencies.len() * 99).div_ceil(100) - 1]),
            ms(*latencies.last().unwrap()),
            r.outage.as_secs_f64(),
        );
    }
    outln!(
        "\n`resiliency::race_retry::stats` over the outage, extra attempts: {}; as counted at the \
         service. The generator started calls at most {} late.",
        (0..CONTENDERS)
            .map(|c| format!(
                "{} ({})",
                group(runs[c].after.extra_attempts - runs[c].before.extra_attempts),
                SHORT[c]
            ))
            .collect::<Vec<_>>()
            .join(", "),
        runs.iter()
            .map(|r| ms(r.late_max))
            .collect::<Vec<_>>()
            .join(" / "),
    );

    // When a call's attempts after the first started, after the failure before them.
    outln!(
        "\n### When the extra attempts started\n\nFrom the end of the attempt before (its failure) \
         to the start of the next, over the outage's calls (attempts observed by \
         `resiliency::race_retry::observe`):\n"
    );
    outln!("| contender | waits | 2nd attempt: median / max | 3rd attempt: median / max |");
    outln!("|---|---:|---:|---:|");
    for (c, r) in runs.iter().enumerate() {
        let mut waits = [Vec::new(), Vec::new()];
        for call in &r.calls {
            let mut attempts: Vec<&Attempt> = call.attempts.iter().collect();
            attempts.sort_by_key(|a| a.number);
            for pair in attempts.windows(2) {
                let ended = pair[0].started + pair[0].elapsed;
                let n = pair[1].number as usize - 2;
                if n < 2 {
                    waits[n].push(pair[1].started.saturating_sub(ended));
                }
            }
        }
        let show = |w: &mut Vec<Duration>| {
            if w.is_empty() {
                return "—".to_string();
            }
            w.sort();
            format!("{} / {}", ms(w[w.len() / 2]), ms(*w.last().unwrap()))
        };
        let count = waits[0].len() + waits[1].len();
        let [second, third] = &mut waits;
        outln!(
            "| {} | {} | {} | {} |",
            NAMES[c],
            group(count as u64),
            show(second),
            show(third)
        );
    }

    // The timeline: extra attempts started per window, by when they started.
    let windows = runs
        .iter()
        .map(|r| r.outage.as_nanos().div_ceil(WINDOW.as_nanos()) as usize)
        .max()
        .unwrap_or(0);
    let mut timeline = vec![[0u64; CONTENDERS]; windows];
    let mut calls_per_window = vec![0u64; windows];
    for (c, r) in runs.iter().enumerate() {
        for call in &r.calls {
            if c == DEFAULTS {
                let w = (call.at.as_nanos() / WINDOW.as_nanos()) as usize;
                calls_per_window[w.min(windows - 1)] += 1;
            }
            for a in call.attempts.iter().filter(|a| a.number > 1) {
                let w = ((call.at + a.started).as_nanos() / WINDOW.as_nanos()) as usize;
                timeline[w.min(windows - 1)][c] += 1;
            }
        }
    }
    outln!(
        "\n### Extra attempts per {} ms of the outage (by when they started)\n",
        WINDOW.as_millis()
    );
    outln!(
        "| window | calls started | {} |",
        SHORT.map(|s| format!("extra, {s}")).join(" | ")
    );
    outln!("|---|---:|{}", "---:|".repeat(CONTENDERS));
    for (w, (extra, calls)) in timeline.iter().zip(&calls_per_window).enumerate() {
        outln!(
            "| {:.1}–{:.1} s | {calls} | {} |",
            w as f64 * WINDOW.as_secs_f64(),
            (w + 1) as f64 * WINDOW.as_secs_f64(),
            extra.map(|e| e.to_string()).join(" | ")
        );
    }

    // The goal.
    let on = &runs[DEFAULTS];
    let calls = on.calls.len() as f64;
    let extra = (OUTAGE_ATTEMPTS[DEFAULTS].load(Relaxed) - on.calls.len() as u64) as f64;
    let t = on.outage.as_secs_f64();
    let deposits_per_sec = SHARE * calls / t;
    let (floor, floor_text) = if deposits_per_sec >= FLOOR_PER_SEC {
        (
            FLOOR_PER_SEC,
            format!(
                "{FLOOR_PER_SEC} (the floor's one burst: deposits bring {deposits_per_sec:.0} \
                 tokens/s, at least its {FLOOR_PER_SEC}/s)"
            ),
        )
    } else {
        (
            FLOOR_PER_SEC * (t + 1.0),
            format!("{FLOOR_PER_SEC} x ({t:.2} + 1) s (the floor)"),
        )
    };
    let allowed = SHARE * calls + MAX_BANKED + floor;
    outln!(
        "\n### Goal: with the defaults, the outage's extra attempts stay within the default budget\n"
    );
    outln!(
        "Allowed = {SHARE} x {} calls + {MAX_BANKED} banked + {floor_text} = {allowed:.1} extra \
         attempts ({:.1}% of the calls).\n",
        calls,
        100.0 * allowed / calls
    );
    let (steady_extra, steady_calls) = timeline
        .iter()
        .zip(&calls_per_window)
        .skip(1)
        .fold((0u64, 0u64), |(e, c), (extra, calls)| {
            (e + extra[DEFAULTS], c + *calls)
        });
    outln!("| measure | measured | goal | result |");
    outln!("|---|---:|---:|---|");
    outln!(
        "| the defaults: extra attempts | {extra} ({:.1}% of the calls) | <= {allowed:.1} | {} |",
        100.0 * extra / calls,
        pass(extra <= allowed)
    );
    outln!(
        "| the defaults, steady state (after the first {} ms): extra attempts / calls started | {steady_extra} / \
         {steady_calls} = {:.1}% | the budget's {:.0}% | {} |",
        WINDOW.as_millis(),
        100.0 * steady_extra as f64 / steady_calls.max(1) as f64,
        100.0 * SHARE,
        pass(steady_extra as f64 <= SHARE * steady_calls as f64 + FLOOR_PER_SEC)
    );
    for c in (0..CONTENDERS).filter(|c| *c != DEFAULTS) {
        outln!(
            "| {} (for comparison): extra attempts | {} ({:.1}% of the calls) | — | — |",
            SHORT[c],
            OUTAGE_ATTEMPTS[c].load(Relaxed) - runs[c].calls.len() as u64,
            100.0 * (OUTAGE_ATTEMPTS[c].load(Relaxed) as f64 / runs[c].calls.len() as f64 - 1.0)
        );
    }
    outln!(
        "\nWhole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish("race_outage");
}
