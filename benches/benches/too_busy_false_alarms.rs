//! False alarms of lag-based load shedding: `cargo bench -p resiliency-benches --bench too_busy_false_alarms`.
//!
//! The same lag traces are fed to toobusy-js's rule as released ([`Smoothing::toobusy()`], its
//! default 500 ms interval) and to ours ([`Smoothing::default()`]: toobusy-js PR #17's samples
//! capped at `2 * max_lag` and the inverse factor while the lag falls, plus our two additions: a
//! late sample after a late one counts per interval it covers ([`sampled`]), and a guard that
//! finds the monitor's timer overdue acts on it at once ([`overdue`])) at our
//! default 10 ms interval, and at 100 ms and 500 ms. `max_lag` is 70 ms (toobusy-js's default)
//! throughout. The tables are printed and written to this benchmark's section of
//! `benches/README.md` (`common::publish`). Everything is computed, nothing
//! is measured on a clock and nothing is random: the figures are exact expectations.
//!
//! # The model
//!
//! Time is counted in whole microseconds from 0.
//!
//! * **A trace** is a function `lag(t)`: how late anything that becomes ready at `t` runs. A quiet
//!   server has `lag(t) = 1 ms`. During a **stall** `[s, e)` the runtime is blocked, so anything
//!   ready at `t` in it runs at the stall's end: `lag(t) = max(e - t, 1 ms)`. During **sustained
//!   overload** every callback runs 200 ms late: `lag(t) = 200 ms`.
//! * **The monitor** is one repeating timer with interval `I` that reschedules itself from the
//!   moment it ran, like Node's `setInterval` (and tokio's `MissedTickBehavior::Delay`): the timer
//!   due at `d` runs at `f = d + lag(d)`, its sample is `f - d = lag(d)` (toobusy-js's
//!   `now - lastTime - interval`), the smoothed lag becomes `rule.next(smoothed, lag(d), max_lag)`
//!   (ours: `sampled(rule, smoothed, previous sample, lag(d), I, max_lag)`, as our monitor does),
//!   and the next timer is due at `f + I`. A stall therefore yields one sample however long it is
//!   (the timer due during it runs once, at its end), or none if no timer falls due during it. The
//!   smoothed lag starts at 0.
//! * **Requests** arrive every 1 ms. The request arriving at `t` is decided when the runtime gets
//!   to it, at `t + lag(t)`: requests that arrive during a stall wait for its end (the *backlog*),
//!   requests during sustained overload are decided 200 ms late. It is refused with probability
//!   `shed_probability(lag at that moment, max_lag)`. toobusy-js: the lag is the smoothed lag, and
//!   a monitor sample taken at the same moment comes first (Node runs the timers phase before it
//!   polls for I/O). Ours: tokio runs the tasks woken before the timer first, so a sample taken at
//!   the same moment comes after; and while a timer due at `d` has not run, the decision acts on
//!   `overdue(rule, smoothed, decided - d, I, max_lag)`. (Our guard looks at the timer on every
//!   call while the runtime lags, and on every 32nd call otherwise; the model looks at every
//!   request.) The figures below
//!   are the mean of these probabilities (the expected share refused), not a sampled outcome.
//! * **Phase.** Whether and how a stall is seen depends on where it falls between two monitor
//!   ticks. Every figure is the mean over 100 runs whose first timer is due at `j * (I + 1 ms) / 100`
//!   for `j = 0..100`, i.e. over stall positions spread evenly across one tick period. The
//!   timeline instead shows the single phase in which a timer is due exactly when the stall starts
//!   (the whole stall is one sample: the worst case for the original rule).
//!
//! # The traces
//!
//! * **(a)** 10 s of quiet with one 300 ms stall at 5 s.
//! * **(b)** 150 ms stalls about every 2 s for 20 s; **(b')** the same with 300 ms stalls. In (b)
//!   the original never refuses (a 150 ms sample adds 50 ms to two thirds of the previous lag,
//!   which stalls 2 s apart keep under 70 ms), so the comparison there is empty; (b') repeats
//!   (a)'s stall. Stall `m` (1 to 10) starts at `2 s * m + (173 ms * m mod 500 ms)`. The offset
//!   spreads the stalls over every phase of both intervals: with an exact 2 s period, a 500 ms
//!   monitor that saw one stall (and so restarted its timer at that stall's end) would not see
//!   the next ones, and the trace would measure that aliasing rather than the rules.
//! * **(c)** 5 s quiet, 10 s of sustained overload (`lag = 200 ms`), 5 s quiet.
//!
//! # What is printed
//!
//! * **After a stall:** the share refused among requests that arrive from each stall's end until
//!   2 s later or the next stall's start, whichever is first. The backlog (requests that arrived
//!   during the stall and are decided at its end) is shown apart, as is the 2 s after the end of
//!   trace (c)'s overload: neither is part of the goal.
//! * **During sustained overload:** the share refused among requests that arrive in trace (c)'s
//!   10 s of overload.
//! * **The goal check**, from those figures: after a stall ours refuses at most one fifth of what
//!   the original refuses; during sustained overload `|ours - original| <= 0.1 * original`.
//! * **A timeline** of trace (a) every 100 ms: each rule's smoothed lag at that moment and the
//!   share refused of the requests arriving in the next 100 ms.

use std::time::Duration;

mod common;
use common::{out, outln};

use resiliency::too_busy::Smoothing;

/// One millisecond, in the model's microseconds.
const MS: u64 = 1_000;
/// toobusy-js's default threshold.
const MAX_LAG: u64 = 70 * MS;
/// The lag of a quiet server.
const QUIET_LAG: u64 = MS;
/// The lag during sustained overload.
const OVERLOAD_LAG: u64 = 200 * MS;
/// A request arrives every this often.
const ARRIVAL_EVERY: u64 = MS;
/// How long after a stall's end requests count as "after the stall".
const AFTER: u64 = 2_000 * MS;
/// How many monitor phases each figure is averaged over.
const PHASES: u64 = 100;

// ---------------------------------------------------------------------------------------------
// Traces
// ---------------------------------------------------------------------------------------------

/// A lag trace: quiet, except for stalls and at most one span of sustained overload.
struct Trace {
    label: &'static str,
    length: u64,
    /// `[start, end)` of each stall, in order.
    stalls: Vec<(u64, u64)>,
    /// `[start, end)` of sustained overload.
    overload: Option<(u64, u64)>,
}

impl Trace {
    /// How late something that becomes ready at `t` runs.
    fn lag(&self, t: u64) -> u64 {
        if let Some(&(_, end)) = self.stalls.iter().find(|&&(s, e)| s <= t && t < e) {
            return (end - t).max(QUIET_LAG);
        }
        match self.overload {
            Some((s, e)) if s <= t && t < e => OVERLOAD_LAG,
            _ => QUIET_LAG,
        }
    }

    /// The arrival windows "after a stall": from each stall's end for `AFTER`, cut at the next
    /// stall's start.
    fn after_stalls(&self) -> Vec<(u64, u64)> {
        let mut windows = Vec::new();
        for (i, &(_, end)) in self.stalls.iter().enumerate() {
            let next = self.stalls.get(i + 1).map_or(self.length, |&(s, _)| s);
            windows.push((end, (end + AFTER).min(next).min(self.length)));
        }
        windows
    }
}

fn one_stall() -> Trace {
    Trace {
        label: "(a) one 300 ms stall",
        length: 10_000 * MS,
        stalls: vec![(5_000 * MS, 5_300 * MS)],
        overload: None,
    }
}

fn bursts(label: &'static str, stall: u64) -> Trace {
    let stalls = (1..=10)
        .map(|m| {
            let start = 2_000 * MS * m + (173 * MS * m) % (500 * MS);
            (start, start + stall)
        })
        .collect();
    Trace {
        label,
        length: 23_000 * MS,
        stalls,
        overload: None,
    }
}

fn sustained() -> Trace {
    Trace {
        label: "(c) 10 s at 200 ms lag",
        length: 20_000 * MS,
        stalls: Vec::new(),
        overload: Some((5_000 * MS, 15_000 * MS)),
    }
}

// ---------------------------------------------------------------------------------------------
// The monitor and the decisions
// ---------------------------------------------------------------------------------------------

/// A rule at an interval.
#[derive(Copy, Clone)]
struct Config {
    label: &'static str,
    smoothing: Smoothing,
    interval: u64,
    /// Ours: guards look at an overdue timer ([`overdue`]) and a late sample after a late one
    /// counts per interval ([`sampled`]); toobusy-js: neither.
    ours: bool,
}

fn configs() -> [Config; 4] {
    let ours = |label, interval| Config {
        label,
        smoothing: Smoothing::default(),
        interval,
        ours: true,
    };
    [
        Config {
            label: "toobusy-js, 500 ms",
            smoothing: Smoothing::toobusy(),
            interval: 500 * MS,
            ours: false,
        },
        ours("ours, 10 ms (default)", 10 * MS),
        ours("ours, 100 ms", 100 * MS),
        ours("ours, 500 ms", 500 * MS),
    ]
}

fn us(t: u64) -> Duration {
    Duration::from_micros(t)
}

/// One run of the monitor over a trace: the moment of every sample and the smoothed lag after it.
struct Run {
    config: Config,
    /// `(when the timer was due, when it ran, smoothed lag after its sample)`, in time order.
    ticks: Vec<(u64, u64, Duration)>,
    /// When requests are decided, sorted: the guard's looks at an overdue timer.
    decisions: Vec<u64>,
}

impl Run {
    /// Runs `config`'s monitor over `trace`, its first timer due at `first_due`.
    fn new(trace: &Trace, config: Config, first_due: u64) -> Run {
        let mut ticks = Vec::new();
        let mut smoothed = Duration::ZERO;
        let mut previous = Duration::ZERO;
        let mut due = first_due;
        let (interval, max_lag) = (us(config.interval), us(MAX_LAG));
        // Run past the trace's end so that late decisions still see the samples before them.
        let mut decisions: Vec<u64> = arrivals(0, trace.length + AFTER)
            .map(|a| a + trace.lag(a))
            .collect();
        decisions.sort_unstable();
        while due < trace.length + AFTER {
            let sample = us(trace.lag(due));
            let ran = due + trace.lag(due);
            smoothed = if config.ours {
                // A decision after `due` and up to `ran` (tokio runs it before the timer) is a
                // guard's look at the overdue timer.
                let first = decisions[decisions.partition_point(|&x| x <= due)..]
                    .first()
                    .filter(|&&x| x <= ran);
                let first_seen = first.map(|&x| us(x - due));
                sampled(
                    config.smoothing,
                    smoothed,
                    previous,
                    sample,
                    first_seen,
                    interval,
                    max_lag,
                )
            } else {
                config.smoothing.next(smoothed, sample, max_lag)
            };
            previous = sample;
            ticks.push((due, ran, smoothed));
            due = ran + config.interval;
        }
        Run {
            config,
            ticks,
            decisions,
        }
    }

    /// The first decision after `t` (or `u64::MAX`).
    fn first_decision_after(&self, t: u64) -> u64 {
        let i = self.decisions.partition_point(|&x| x <= t);
        self.decisions.get(i).copied().unwrap_or(u64::MAX)
    }

    /// The lag a decision at `t` acts on. toobusy-js: the smoothed lag, a sample taken at `t`
    /// included (Node runs the timers phase first). Ours: tokio runs what was woken before the
    /// timer, so a sample taken at `t` comes after; and a timer due before `t` that has not run
    /// is overdue, which the guard counts ([`overdue`]).
    fn lag_at(&self, t: u64) -> Duration {
        let taken = if self.config.ours {
            self.ticks.partition_point(|&(_, ran, _)| ran < t)
        } else {
            self.ticks.partition_point(|&(_, ran, _)| ran <= t)
        };
        let smoothed = taken
            .checked_sub(1)
            .map_or(Duration::ZERO, |i| self.ticks[i].2);
        match self.ticks.get(taken) {
            Some(&(due, _, _)) if self.config.ours && due < t => {
                // The first decision after `due` is the first look at the overdue timer.
                let first_seen = self.first_decision_after(due).min(t) - due;
                overdue(
                    self.config.smoothing,
                    smoothed,
                    us(first_seen),
                    us(t - due),
                    us(self.config.interval),
                    us(MAX_LAG),
                )
            }
            _ => smoothed,
        }
    }

    /// The probability that the request arriving at `arrival` is refused.
    fn refusal(&self, trace: &Trace, arrival: u64) -> f64 {
        let decided = arrival + trace.lag(arrival);
        shed_probability(self.lag_at(decided), us(MAX_LAG))
    }
}

// ---------------------------------------------------------------------------------------------
// Our monitor's and guard's two additions, over the public `Smoothing::next`, and the refusal
// rule both share: the rules of `resiliency-runtime/src/too_busy/rules.rs` (its unit tests pin
// the same figures)
// ---------------------------------------------------------------------------------------------

/// The share of calls refused at smoothed lag `lag`: 0 up to `max_lag`, rising linearly to 1 at
/// twice it (toobusy-js's rule, and ours).
fn shed_probability(lag: Duration, max_lag: Duration) -> f64 {
    if max_lag.is_zero() {
        return if lag.is_zero() { 0.0 } else { 1.0 };
    }
    let over = (lag.as_secs_f64() - max_lag.as_secs_f64()) / max_lag.as_secs_f64();
    over.clamp(0.0, 1.0)
}

/// How many samples a timer overdue by `overdue` counts for, first seen `first_seen` overdue: one,
/// plus one per `interval` since, at most 32.
fn counted(first_seen: Duration, overdue: Duration, interval: Duration) -> u32 {
    let since = overdue.saturating_sub(first_seen);
    1 + (since.as_nanos() / interval.as_nanos().max(1)).min(31) as u32
}

/// `samples` times `Smoothing::next` with `sample`.
fn repeated(
    rule: Smoothing,
    current: Duration,
    samples: u32,
    sample: Duration,
    max_lag: Duration,
) -> Duration {
    (0..samples).fold(current, |lag, _| rule.next(lag, sample, max_lag))
}

/// The smoothed lag after the monitor's timer ran `sample` late: one sample, unless the sample
/// before it was late too or calls first found the timer `first_seen` overdue; then one more per
/// `interval` it stayed overdue.
fn sampled(
    rule: Smoothing,
    current: Duration,
    previous: Duration,
    sample: Duration,
    first_seen: Option<Duration>,
    interval: Duration,
    max_lag: Duration,
) -> Duration {
    let behind = if previous > max_lag && sample > max_lag {
        Duration::ZERO
    } else {
        first_seen.map_or(sample, |seen| seen.min(sample))
    };
    repeated(
        rule,
        current,
        counted(behind, sample, interval),
        sample,
        max_lag,
    )
}

/// The smoothed lag a guard acts on while the monitor's timer is overdue: first found
/// `first_seen` overdue, `overdue` now; never below `current`.
fn overdue(
    rule: Smoothing,
    current: Duration,
    first_seen: Duration,
    overdue: Duration,
    interval: Duration,
    max_lag: Duration,
) -> Duration {
    let samples = counted(first_seen, overdue, interval);
    repeated(rule, current, samples, overdue, max_lag).max(current)
}

/// The arrival times of requests in `[start, end)`.
fn arrivals(start: u64, end: u64) -> impl Iterator<Item = u64> {
    (start.div_ceil(ARRIVAL_EVERY)..end.div_ceil(ARRIVAL_EVERY)).map(|i| i * ARRIVAL_EVERY)
}

/// The expected share refused among requests arriving in `windows`: its mean over the phases, and
/// its lowest and highest value in any one phase.
#[derive(Copy, Clone)]
struct Share {
    mean: f64,
    min: f64,
    max: f64,
}

fn share(trace: &Trace, config: Config, windows: &[(u64, u64)]) -> Share {
    let period = config.interval + QUIET_LAG;
    let (mut sum, mut min, mut max) = (0.0, f64::INFINITY, f64::NEG_INFINITY);
    for j in 0..PHASES {
        let run = Run::new(trace, config, j * period / PHASES);
        let (mut refused, mut count) = (0.0, 0usize);
        for &(start, end) in windows {
            for t in arrivals(start, end) {
                refused += run.refusal(trace, t);
                count += 1;
            }
        }
        // Every phase sees the same arrivals, so the mean of the phases' shares is the share of
        // all their requests.
        let phase = refused / count as f64;
        sum += phase;
        min = min.min(phase);
        max = max.max(phase);
    }
    Share {
        mean: sum / PHASES as f64,
        min,
        max,
    }
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Prints one markdown row per trace: the share in `windows(trace)` for every configuration, as
/// the mean over the phases and, in brackets, the range over the phases.
fn table(
    title: &str,
    traces: &[&Trace],
    windows: impl Fn(&Trace) -> Vec<(u64, u64)>,
) -> Vec<Vec<f64>> {
    let configs = configs();
    outln!("### {title}\n");
    out!("| trace |");
    for c in &configs {
        out!(" {} |", c.label);
    }
    outln!("\n|---|{}", "---:|".repeat(configs.len()));
    let mut rows = Vec::new();
    for trace in traces {
        let w = windows(trace);
        let row = configs.map(|c| share(trace, c, &w));
        out!("| {} |", trace.label);
        for s in row {
            out!(
                " {} [{:.1}-{:.1}] |",
                pct(s.mean),
                100.0 * s.min,
                100.0 * s.max
            );
        }
        outln!();
        rows.push(row.iter().map(|s| s.mean).collect());
    }
    outln!();
    rows
}

/// Trace (a) every 100 ms around the stall, in the phase where a timer is due as the stall starts.
fn timeline(trace: &Trace) {
    let configs = configs();
    let (stall, _) = trace.stalls[0];
    let runs = configs.map(|c| Run::new(trace, c, stall % (c.interval + QUIET_LAG)));
    outln!("### Timeline of trace (a): a timer due as the stall starts\n");
    outln!(
        "Each rule's smoothed lag at `t`, and the share refused of the requests arriving in \
         `[t, t + 100 ms)`. The stall is `[5.0 s, 5.3 s)`: the requests arriving in it are \
         decided at its end (toobusy-js: after the sample the stall causes; ours: before it, with the \
         overdue timer counted), hence the refusals in its rows.\n"
    );
    out!("| t | lag(t) |");
    for c in &configs {
        out!(" {} lag | refused |", c.label);
    }
    outln!("\n|---:|---:|{}", "---:|---:|".repeat(configs.len()));
    for step in 47..=75 {
        let t = step * 100 * MS;
        out!("| {:.1} s | {} ms |", t as f64 / 1e6, trace.lag(t) / MS);
        for run in &runs {
            let refused: f64 = arrivals(t, t + 100 * MS)
                .map(|a| run.refusal(trace, a))
                .sum::<f64>()
                / (100 * MS / ARRIVAL_EVERY) as f64;
            out!(
                " {:.1} ms | {} |",
                run.lag_at(t).as_secs_f64() * 1e3,
                pct(refused)
            );
        }
        outln!();
    }
    outln!();
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "MISS"
    }
}

/// The copy above gives the figures the runtime's own rule is pinned to (the unit tests of
/// `resiliency-runtime/src/too_busy/rules.rs`): a copy that drifted would stop the run here
/// rather than measure a rule the runtime does not have.
fn check_the_copy() {
    let ms = Duration::from_millis;
    let fast = Smoothing::default();
    let lone = sampled(fast, ms(0), ms(1), ms(300), None, ms(10), ms(70));
    assert_eq!(lone.as_micros(), 46_666, "a lone stall");
    assert!(sampled(fast, ms(0), ms(1), ms(300), Some(ms(20)), ms(10), ms(70)) > ms(139));
    assert!(sampled(fast, ms(47), ms(300), ms(300), None, ms(10), ms(70)) > ms(139));
    let first = overdue(fast, ms(0), ms(300), ms(300), ms(10), ms(70));
    assert_eq!(first.as_micros(), 46_666, "first seen overdue");
    let later = overdue(fast, ms(0), ms(300), ms(340), ms(10), ms(70));
    assert_eq!(later.as_millis(), 121, "overdue 40 ms more");
}

fn main() {
    check_the_copy();
    let a = one_stall();
    let b = bursts("(b) 150 ms stall every ~2 s", 150 * MS);
    let b2 = bursts("(b') 300 ms stall every ~2 s", 300 * MS);
    let c = sustained();

    outln!("## #[too_busy] false alarms: toobusy-js's rule vs ours on the same lag traces\n");
    outln!(
        "max_lag = 70 ms; requests every 1 ms; expected shares: the mean over {PHASES} \
         monitor phases, with [lowest-highest] over those phases, in %. See the file's header \
         for the model.\n"
    );

    let after = table(
        "Refused after a stall ends (arrivals from its end for 2 s, or to the next stall)",
        &[&a, &b, &b2],
        Trace::after_stalls,
    );
    let during = table(
        "Refused during sustained overload (arrivals in the 10 s of overload)",
        &[&c],
        |t| t.overload.into_iter().collect(),
    );
    table(
        "Not in the goal: the backlog (arrivals during a stall, decided as it ends), and the 2 s \
         after the overload ends",
        &[&a, &b, &b2, &c],
        |t| match t.overload {
            Some((_, end)) => vec![(end, end + AFTER)],
            None => t.stalls.clone(),
        },
    );

    outln!("### Goal check\n");
    outln!("| configuration | trace | goal | ours | original | result |");
    outln!("|---|---|---|---:|---:|---|");
    for (col, config) in configs().iter().enumerate().skip(1) {
        let mut all = true;
        for (trace, row) in [&a, &b, &b2].iter().zip(&after) {
            let (ours, original) = (row[col], row[0]);
            let ok = ours <= original / 5.0;
            all &= ok;
            let vacuous = if original == 0.0 {
                " (original refuses none)"
            } else {
                ""
            };
            outln!(
                "| {} | {} | after a stall: ours <= original / 5 | {} | {} | {}{} |",
                config.label,
                trace.label,
                pct(ours),
                pct(original),
                verdict(ok),
                vacuous
            );
        }
        // "Within 10% of it (no lost protection)": ours may refuse more, sooner, but not less
        // than 90% of what the original refuses. Whether it is also within 10% above is printed.
        let (ours, original) = (during[0][col], during[0][0]);
        let ok = ours >= 0.9 * original;
        all &= ok;
        let symmetric = if (ours - original).abs() <= 0.1 * original {
            "within 10% either way"
        } else if ours > original {
            "more than 10% above: it refuses more, sooner"
        } else {
            "more than 10% below"
        };
        outln!(
            "| {} | {} | during overload: at least 90% of original | {} ({:+.1}% rel.; {symmetric}) | {} | {} |",
            config.label,
            c.label,
            pct(ours),
            100.0 * (ours - original) / original,
            pct(original),
            verdict(ok)
        );
        outln!(
            "| **{}** | all | | | | **{}** |",
            config.label,
            verdict(all)
        );
    }
    outln!();

    timeline(&a);
    common::publish("too_busy_false_alarms");
}
