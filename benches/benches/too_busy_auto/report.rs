//! The tables: the setup, each scenario's figures, the convergence after a change, the goals of
//! `ours auto`, and the checks per run.

use std::fmt::Write as _;
use std::time::Duration;

use crate::common::open_loop::{Kind, Outcome};
use crate::common::{load_average, ms, ms_or_dash, outln, pass};
use crate::figures::{
    acc_best, mean_in, reference, reference_name, settled, Figures, LoadRuns, ScenarioRuns, TIE,
};
use crate::run::{Run, Sample, SAMPLE_EVERY, TIMEOUT, UNLOADED_LANES, UNLOADED_REQUESTS};
use crate::scenario::{Change, Phase, Plan, Regime, Scenario, SMALL_POOL_LIMIT_TIMES};
use crate::server::{Contender, CONTENDERS, FIXED_HEADROOM};
use crate::SEED;

/// (a) Without a capacity limit, goodput at least this share of the unguarded run's.
const GOAL_OF_UNGUARDED: f64 = 0.95;
/// (b), (d), (e) Goodput at least this share of the capacity.
const GOAL_OF_CAPACITY: f64 = 0.9;
/// (b), (e) Accepted p99 at most this multiple of the unloaded p99.
const GOAL_P99_TIMES: f64 = 2.5;
/// (c) Requests refused that the unguarded run answered: at most this share of its 200s.
const GOAL_FALSE_REFUSALS: f64 = 0.005;

fn pct(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// An accepted p99 over the unloaded p99.
fn ratio(p99: Option<Duration>, unloaded: Duration) -> String {
    p99.map_or("—".into(), |p| {
        format!("{:.2}", p.as_secs_f64() / unloaded.as_secs_f64())
    })
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// One markdown table row of `cells`.
fn row(cells: impl IntoIterator<Item = String>) {
    let mut line = String::from("|");
    for cell in cells {
        let _ = write!(line, " {cell} |");
    }
    outln!("{line}");
}

/// A run's contender as the tables name it (`fixed` with its limit).
fn label(run: &Run) -> String {
    match run.fixed_limit {
        Some(limit) => format!("fixed {limit}"),
        None => run.contender.name().into(),
    }
}

/// The title, the machine, the method, the contenders and the scenarios.
pub(crate) fn intro(plan: &Plan, open_files: u64) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!(
        "# resiliency `#[too_busy]`: adaptive concurrency limits over a matrix of dependencies\n"
    );
    if plan.quick {
        outln!("**`AUTO_BENCH_QUICK`: every time halved, fewer loads; not published.**\n");
    }
    if let Some(only) = &plan.only {
        outln!("**`AUTO_BENCH_ONLY={only}`: those scenarios alone; not published.**\n");
    }
    outln!(
        "{cores} cores available; open-files limit {open_files}; load average at start: {}.\n",
        load_average()
    );
    outln!(
        "Server: axum, one current-thread runtime pinned to CPU 0, a fresh server and fresh \
         guards for every run; its handler waits on a dependency whose holds are drawn per \
         request from a seeded generator (request `i` of a run gets the same hold, and the same \
         fate, under every contender). Load generator: a current-thread runtime pinned to CPU 1, \
         open loop, Poisson arrivals (seed {SEED:#x}, the same for every contender), latency from \
         each request's scheduled send time, client timeout {}. Per phase, over its measured \
         window: goodput is the 200s answered in the window per second, held against the \
         dependency's capacity (a pool) or the unguarded run's goodput (no capacity limit); \
         latencies, refusals and errors are of the requests scheduled in the window. Unloaded \
         latency: {UNLOADED_REQUESTS} healthy requests to `none` in {UNLOADED_LANES} lanes of one \
         request at a time.\n",
        seconds(TIMEOUT),
    );
    outln!("| contender | setup |");
    outln!("|---|---|");
    for contender in CONTENDERS {
        outln!("| {} | {} |", contender.name(), contender.setup());
    }
    outln!();
    outln!("| scenario | dependency | phases | loads |");
    outln!("|---|---|---|---|");
    for s in &plan.scenarios {
        let loads: Vec<String> = s.loads.iter().map(|&l| s.load_name(l)).collect();
        outln!(
            "| `{}` | {} | {} | {} |",
            s.name,
            s.dependency(),
            s.phases_label(),
            loads.join(", ")
        );
    }
    outln!();
}

/// A scenario's unloaded latency, and one table per load.
pub(crate) fn scenario(result: &ScenarioRuns<'_>) {
    let s = result.scenario;
    outln!("### `{}`: {}\n", s.name, s.dependency());
    // One line per measurement: the phases of one hold factor share one.
    for (i, u) in result.unloaded.iter().enumerate() {
        let scale = s.phases[i].scale;
        if s.phases[..i].iter().any(|p| p.scale == scale) {
            continue;
        }
        let names: Vec<&str> = s.phases[i..]
            .iter()
            .filter(|p| p.scale == scale)
            .map(|p| p.name)
            .collect();
        outln!(
            "Unloaded ({}): p50 {}, **p99 {}**, highest {}.",
            names.join(", "),
            ms(u.p50),
            ms(u.p99),
            ms(u.max)
        );
    }
    outln!();
    for runs in &result.loads {
        load_table(s, result, runs);
    }
}

fn load_table(s: &Scenario, result: &ScenarioRuns<'_>, runs: &LoadRuns) {
    outln!("#### `{}` at {}\n", s.name, s.load_name(runs.load));
    outln!(
        "| contender | phase | sent | goodput (200s/s) | {} | accepted p50 | accepted p99 | p99 / unloaded p99 | refused (503) | other 5xx (502) | timeouts + errors |",
        reference_name(s)
    );
    outln!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for run in &runs.runs {
        for (i, phase) in s.phases.iter().enumerate() {
            let f = Figures::phases(run, &[phase]);
            let reference = reference(s, runs, &[phase]);
            let ratio = ratio(f.p99, result.unloaded[i].p99);
            outln!(
                "| {} | {} | {} | {:.1} | {} | {} | {} | {ratio} | {} | {} | {} |",
                label(run),
                phase.name,
                f.sent,
                f.goodput(),
                pct(f.goodput() / reference),
                ms_or_dash(f.p50),
                ms_or_dash(f.p99),
                pct(f.refused_share()),
                pct(f.failed_share()),
                f.lost,
            );
        }
    }
    if let Some(peak) = runs.unguarded_peak {
        let fixed = runs.find(Contender::Fixed);
        outln!(
            "\n`fixed`'s limit: {}, {FIXED_HEADROOM}x the highest in-flight count sampled in \
             `none`'s measured window ({peak}), rounded up.",
            fixed.fixed_limit.unwrap_or_default()
        );
    }
    outln!();
}

/// The time a run settles after a change, as the goals (d) and (e) read it: every bin from then
/// to the end of the changed phase has goodput at least `GOAL_OF_CAPACITY` of its capacity
/// and, after a halving, an accepted p99 within `GOAL_P99_TIMES` the unloaded p99.
fn settle_time(result: &ScenarioRuns<'_>, change: &Change, run: &Run) -> Option<Duration> {
    let s = result.scenario;
    let phase = &s.phases[change.phase];
    let least = GOAL_OF_CAPACITY * s.capacity(phase).expect("a pool has a capacity");
    let bound = result.unloaded[change.phase].p99.mul_f64(GOAL_P99_TIMES);
    let with_latency = s.regime == Regime::Halving;
    settled(run, (phase.start, phase.end), change.bin, |f| {
        f.goodput() >= least && (!with_latency || f.p99.is_some_and(|p| p <= bound))
    })
}

fn settle_label(time: Option<Duration>) -> String {
    time.map_or("never".into(), seconds)
}

/// How soon each contender settles after each change.
pub(crate) fn convergence(results: &[ScenarioRuns<'_>]) {
    let changed: Vec<(&ScenarioRuns<'_>, &Change, &LoadRuns)> = results
        .iter()
        .filter_map(|r| r.scenario.change.as_ref().map(|c| (r, c)))
        .flat_map(|(r, c)| r.loads.iter().map(move |l| (r, c, l)))
        .collect();
    if changed.is_empty() {
        return;
    }
    outln!("### Convergence after a change\n");
    outln!(
        "From the change: the earliest time after it from which every bin up to the phase's end \
         has a goodput (200s answered in it) of at least {:.0}% of the changed capacity and, \
         after a halving, an accepted p99 (requests sent in it) within {GOAL_P99_TIMES}x the \
         unloaded p99. Bins: {}.\n",
        100.0 * GOAL_OF_CAPACITY,
        results
            .iter()
            .filter_map(|r| r.scenario.change.map(|c| format!(
                "`{}` {} ms",
                r.scenario.name,
                c.bin.as_millis()
            )))
            .collect::<Vec<_>>()
            .join(", ")
    );
    row(std::iter::once("contender".to_string()).chain(
        changed
            .iter()
            .map(|(r, _, l)| format!("`{}` {}", r.scenario.name, r.scenario.load_name(l.load))),
    ));
    row(std::iter::once("---".to_string()).chain(changed.iter().map(|_| "---:".into())));
    for contender in CONTENDERS {
        row(std::iter::once(contender.name().to_string()).chain(
            changed
                .iter()
                .map(|(r, c, l)| settle_label(settle_time(r, c, l.find(contender)))),
        ));
    }
    outln!();
}

/// One row of the goals table.
struct Goal {
    goal: &'static str,
    case: String,
    measured: String,
    bound: String,
    ok: bool,
}

/// The goals of `ours auto`, each with its figures.
pub(crate) fn goals(results: &[ScenarioRuns<'_>]) {
    let mut rows = Vec::new();
    for result in results {
        for runs in &result.loads {
            goal_unguarded(result, runs, &mut rows);
            goal_overload(result, runs, &mut rows);
            goal_false_refusals(result, runs, &mut rows);
            goal_change(result, runs, &mut rows);
            goal_small_pool(result, runs, &mut rows);
        }
    }
    outln!("### Goals: `ours auto`\n");
    outln!("| goal | scenario, load, phase | measured | bound | result |");
    outln!("|---|---|---|---|---|");
    for g in &rows {
        outln!(
            "| {} | {} | {} | {} | {} |",
            g.goal,
            g.case,
            g.measured,
            g.bound,
            pass(g.ok)
        );
    }
    let passed = rows.iter().filter(|g| g.ok).count();
    outln!(
        "\n{passed} of {} goals met. tower-acc's best in a phase: the tower-acc algorithm with the \
         highest goodput in it (within {:.0}% of the reference, the lowest accepted p99).\n",
        rows.len(),
        100.0 * TIE
    );
}

fn case(s: &Scenario, runs: &LoadRuns, phase: Option<&Phase>) -> String {
    let mut out = format!("`{}`, {}", s.name, s.load_name(runs.load));
    if let Some(p) = phase.filter(|_| s.phases.len() > 1) {
        let _ = write!(out, ", phase {}", p.name);
    }
    out
}

/// (a) No capacity limit: goodput at least 95% of the unguarded run's.
fn goal_unguarded(result: &ScenarioRuns<'_>, runs: &LoadRuns, rows: &mut Vec<Goal>) {
    let s = result.scenario;
    if s.regime != Regime::Unlimited {
        return;
    }
    for phase in &s.phases {
        let ours = Figures::phases(runs.find(Contender::OursAuto), &[phase]);
        let unguarded = reference(s, runs, &[phase]);
        rows.push(Goal {
            goal: "(a) no capacity limit: goodput",
            case: case(s, runs, Some(phase)),
            measured: format!(
                "{:.1}/s = {} of unguarded {unguarded:.1}/s",
                ours.goodput(),
                pct(ours.goodput() / unguarded)
            ),
            bound: format!(">= {:.0}%", 100.0 * GOAL_OF_UNGUARDED),
            ok: ours.goodput() >= GOAL_OF_UNGUARDED * unguarded,
        });
    }
}

/// (b) An overloaded pool: in every phase, goodput at least 90% of capacity, accepted p99 within
/// 2.5x the unloaded p99 and no higher than tower-acc's best's.
fn goal_overload(result: &ScenarioRuns<'_>, runs: &LoadRuns, rows: &mut Vec<Goal>) {
    let s = result.scenario;
    if !s.overload_goal(runs.load) {
        return;
    }
    for (i, phase) in s.phases.iter().enumerate() {
        let ours = Figures::phases(runs.find(Contender::OursAuto), &[phase]);
        let capacity = s.capacity(phase).expect("a pool has a capacity");
        let bound = result.unloaded[i].p99.mul_f64(GOAL_P99_TIMES);
        let best = acc_best(s, runs, &[phase]);
        let best_p99 = best.and_then(|b| Figures::phases(b, &[phase]).p99);
        let goodput_ok = ours.goodput() >= GOAL_OF_CAPACITY * capacity;
        let p99_ok = ours.p99.is_some_and(|p| p <= bound);
        let vs_acc_ok = match (ours.p99, best_p99) {
            (Some(o), Some(t)) => o <= t,
            (_, None) => true,
            (None, Some(_)) => false,
        };
        rows.push(Goal {
            goal: "(b) overloaded pool: goodput, accepted p99, vs tower-acc",
            case: case(s, runs, Some(phase)),
            measured: format!(
                "{:.1}/s = {} of {capacity:.0}/s; p99 {} ({}x unloaded {}); {} p99 {}",
                ours.goodput(),
                pct(ours.goodput() / capacity),
                ms_or_dash(ours.p99),
                ratio(ours.p99, result.unloaded[i].p99),
                ms(result.unloaded[i].p99),
                best.map_or("no tower-acc run", |b| b.contender.name()),
                ms_or_dash(best_p99),
            ),
            bound: format!(
                ">= {:.0}%; <= {} ({GOAL_P99_TIMES}x); <= {}",
                100.0 * GOAL_OF_CAPACITY,
                ms(bound),
                ms_or_dash(best_p99)
            ),
            ok: goodput_ok && p99_ok && vs_acc_ok,
        });
    }
}

/// (c) Fast failures, the rest healthy (no capacity limit): ours refuses next to none of the
/// requests that the unguarded run answered.
fn goal_false_refusals(result: &ScenarioRuns<'_>, runs: &LoadRuns, rows: &mut Vec<Goal>) {
    let s = result.scenario;
    if s.regime != Regime::Unlimited || s.fail_share == 0.0 {
        return;
    }
    let ours = runs.find(Contender::OursAuto);
    let unguarded = runs.find(Contender::Unlimited);
    let answered = |o: &Outcome| o.kind == Kind::Accepted;
    let refused = |o: &Outcome| o.kind == Kind::Refused;
    let total_refused = ours.outcomes.iter().filter(|o| refused(o)).count();
    let unguarded_answered = unguarded.outcomes.iter().filter(|o| answered(o)).count();
    let false_refusals = ours
        .outcomes
        .iter()
        .zip(&unguarded.outcomes)
        .filter(|(o, u)| refused(o) && answered(u))
        .count();
    let most = (GOAL_FALSE_REFUSALS * unguarded_answered as f64).floor() as usize;
    rows.push(Goal {
        goal: "(c) fast failures, the rest healthy: refusals of calls the unguarded run answered",
        case: case(s, runs, None),
        measured: format!(
            "{false_refusals} of the {unguarded_answered} `none` answered (the whole run); ours \
             refused {total_refused} of {} in all",
            ours.outcomes.len()
        ),
        bound: format!("<= {most} ({}%)", 100.0 * GOAL_FALSE_REFUSALS),
        ok: false_refusals <= most,
    });
}

/// (d) A permanent slowdown: back to 90% of the slowed capacity within 3 s; (e) a halving:
/// followed within 2 s (the allowances of the changed phases, halved by `AUTO_BENCH_QUICK`).
fn goal_change(result: &ScenarioRuns<'_>, runs: &LoadRuns, rows: &mut Vec<Goal>) {
    let s = result.scenario;
    let Some((change, _, allowance)) = s.changed() else {
        return;
    };
    let time = settle_time(result, &change, runs.find(Contender::OursAuto));
    let goal = match s.regime {
        Regime::Slowdown => "(d) permanent slowdown: back to 90% of the slowed capacity",
        Regime::Growing => "(g) capacity grown: back to 90% of the grown capacity",
        _ => "(e) capacity halved: goodput and p99 followed",
    };
    rows.push(Goal {
        goal,
        case: case(s, runs, None),
        measured: format!(
            "{} ({} ms bins)",
            settle_label(time),
            change.bin.as_millis()
        ),
        bound: format!("<= {}", seconds(allowance)),
        ok: time.is_some_and(|t| t <= allowance),
    });
}

/// (f) A pool of 1, 2 or 4 slots: the learned limit, its mean over the measured window, within
/// `SMALL_POOL_LIMIT_TIMES` its slots.
fn goal_small_pool(result: &ScenarioRuns<'_>, runs: &LoadRuns, rows: &mut Vec<Goal>) {
    let s = result.scenario;
    let Some(slots) = s.small_pool() else {
        return;
    };
    let phase = s.first();
    let limit = mean_in(runs.find(Contender::OursAuto), phase, |x| {
        x.limit.map(f64::from)
    });
    let most = SMALL_POOL_LIMIT_TIMES * f64::from(slots);
    rows.push(Goal {
        goal: "(f) pools of 1, 2 and 4 slots: limit within 3x the slots",
        case: case(s, runs, None),
        measured: limit.map_or_else(
            || "no limit sampled".into(),
            |l| {
                format!(
                    "mean limit {l:.1} ({:.1}x {slots} slots)",
                    l / f64::from(slots)
                )
            },
        ),
        bound: format!("<= {most:.0}"),
        ok: limit.is_some_and(|l| l <= most),
    });
}

/// The checks per run: the generator kept up, the run drained, in flight and limits per phase,
/// tower-acc's one limiter.
pub(crate) fn checks(results: &[ScenarioRuns<'_>]) {
    outln!("### Checks per run\n");
    outln!(
        "| scenario, load | contender | sent | generator late p99 / max | drained in | in flight, mean per phase | limit, mean per phase | one limiter |"
    );
    outln!("|---|---|---:|---:|---:|---:|---:|---|");
    for result in results {
        let s = result.scenario;
        for runs in &result.loads {
            for r in &runs.runs {
                let means = |value: &dyn Fn(&Sample) -> Option<f64>| {
                    s.phases
                        .iter()
                        .map(|p| mean_in(r, p, value).map_or("—".into(), |m| format!("{m:.1}")))
                        .collect::<Vec<_>>()
                        .join(" / ")
                };
                outln!(
                    "| {} | {} | {} | {:.1} / {:.1} ms | {:.1} s | {} | {} | {} |",
                    case(s, runs, None),
                    label(r),
                    r.outcomes.len(),
                    r.send_late_p99.as_secs_f64() * 1e3,
                    r.send_late_max.as_secs_f64() * 1e3,
                    r.wall.as_secs_f64(),
                    means(&|x| Some(x.in_flight as f64)),
                    means(&|x| x.limit.map(f64::from)),
                    match r.one_limiter {
                        Some(true) => "yes",
                        Some(false) => "**no**",
                        None => "—",
                    },
                );
            }
        }
    }
    let ours_readable = results
        .iter()
        .flat_map(|r| &r.loads)
        .map(|l| l.find(Contender::OursAuto))
        .any(|r| r.samples.iter().any(|s| s.limit.is_some()));
    outln!(
        "\n\"generator late\": how long after its scheduled time the generator started a request \
         (the latencies count it). \"drained in\": from the run's start until the last request \
         finished or timed out. \"in flight\": the handlers admitted and not yet finished \
         (waiting for or holding a slot), sampled every {} ms over each phase's measured window. \
         \"one limiter\": every update of tower-acc's algorithm in the run reached the same \
         limiter. `ours auto`'s limit {} through `resiliency::too_busy::get`.\n",
        SAMPLE_EVERY.as_millis(),
        if ours_readable {
            "was read"
        } else {
            "could not be read (no guard of that name)"
        },
    );
}
