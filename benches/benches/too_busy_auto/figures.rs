//! The runs of a scenario, and the figures read from them: per window, against a reference, the
//! best of tower-acc, and how soon a run settles after a change.

use std::time::Duration;

use crate::common::open_loop::Kind;
use crate::common::percentile;
use crate::run::{Run, Sample, Unloaded};
use crate::scenario::{Load, Phase, Regime, Scenario};
use crate::server::Contender;

/// The band within which two goodput shares are a tie (a share of the reference).
pub(crate) const TIE: f64 = 0.02;

/// A scenario's runs: its unloaded latency per phase, and the runs at each load.
pub(crate) struct ScenarioRuns<'a> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) unloaded: Vec<Unloaded>,
    pub(crate) loads: Vec<LoadRuns>,
}

/// The seven runs at one load, in `CONTENDERS`' order.
pub(crate) struct LoadRuns {
    pub(crate) load: Load,
    pub(crate) runs: Vec<Run>,
    /// Without a capacity limit: the highest in-flight count sampled in the unguarded run's
    /// measured window, which `fixed`'s limit comes from.
    pub(crate) unguarded_peak: Option<usize>,
}

impl LoadRuns {
    pub(crate) fn find(&self, contender: Contender) -> &Run {
        self.runs
            .iter()
            .find(|r| r.contender == contender)
            .expect("every contender runs at every load")
    }

    pub(crate) fn acc(&self) -> impl Iterator<Item = &Run> {
        self.runs
            .iter()
            .filter(|r| matches!(r.contender, Contender::Acc(_)))
    }
}

/// Figures of some windows of a run: of the requests scheduled in them, and of the 200s answered
/// in them.
#[derive(Clone, Debug)]
pub(crate) struct Figures {
    pub(crate) sent: usize,
    /// 503s.
    pub(crate) refused: usize,
    /// Other statuses (the 502s of calls that fail at once).
    pub(crate) failed: usize,
    /// Timeouts and other errors.
    pub(crate) lost: usize,
    pub(crate) p50: Option<Duration>,
    pub(crate) p99: Option<Duration>,
    /// 200s whose answer arrived in the windows (whenever they were sent).
    pub(crate) answered: usize,
    pub(crate) seconds: f64,
}

impl Figures {
    /// Over `windows` (from, to): the requests scheduled in them, and the 200s answered in them.
    pub(crate) fn of(run: &Run, windows: &[(Duration, Duration)]) -> Figures {
        let within = |t: Duration| windows.iter().any(|w| t >= w.0 && t < w.1);
        let mut accepted = Vec::new();
        let mut f = Figures {
            sent: 0,
            refused: 0,
            failed: 0,
            lost: 0,
            p50: None,
            p99: None,
            answered: 0,
            seconds: windows.iter().map(|w| (w.1 - w.0).as_secs_f64()).sum(),
        };
        for o in &run.outcomes {
            if o.kind == Kind::Accepted && within(o.at + o.latency) {
                f.answered += 1;
            }
            if !within(o.at) {
                continue;
            }
            f.sent += 1;
            match o.kind {
                Kind::Accepted => accepted.push(o.latency),
                Kind::Refused => f.refused += 1,
                Kind::OtherStatus => f.failed += 1,
                Kind::Timeout | Kind::Error => f.lost += 1,
            }
        }
        accepted.sort();
        f.p50 = percentile(&accepted, 0.5);
        f.p99 = percentile(&accepted, 0.99);
        f
    }

    /// Over the measured windows of `phases`.
    pub(crate) fn phases(run: &Run, phases: &[&Phase]) -> Figures {
        let windows: Vec<_> = phases.iter().map(|p| p.window()).collect();
        Figures::of(run, &windows)
    }

    /// 200s answered per second.
    pub(crate) fn goodput(&self) -> f64 {
        self.answered as f64 / self.seconds
    }

    pub(crate) fn refused_share(&self) -> f64 {
        self.refused as f64 / self.sent.max(1) as f64
    }

    pub(crate) fn failed_share(&self) -> f64 {
        self.failed as f64 / self.sent.max(1) as f64
    }
}

/// What goodput over the measured windows of `phases` is held against, per second: the
/// dependency's capacity in them (a pool), or the unguarded run's goodput in them (no capacity
/// limit).
pub(crate) fn reference(scenario: &Scenario, runs: &LoadRuns, phases: &[&Phase]) -> f64 {
    if scenario.regime == Regime::Unlimited {
        return Figures::phases(runs.find(Contender::Unlimited), phases).goodput();
    }
    let (mut calls, mut seconds) = (0.0, 0.0);
    for p in phases {
        let length = (p.end - p.measure_from).as_secs_f64();
        calls += length * scenario.capacity(p).expect("a pool has a capacity");
        seconds += length;
    }
    calls / seconds
}

/// The name of the reference, for the tables.
pub(crate) fn reference_name(scenario: &Scenario) -> &'static str {
    match scenario.regime {
        Regime::Unlimited => "of unguarded",
        _ => "of capacity",
    }
}

/// The tower-acc run with the highest goodput over `phases` (within `TIE` of the reference, the
/// lowest accepted p99).
pub(crate) fn acc_best<'a>(
    scenario: &Scenario,
    runs: &'a LoadRuns,
    phases: &[&Phase],
) -> Option<&'a Run> {
    let reference = reference(scenario, runs, phases);
    let acc: Vec<(&Run, Figures)> = runs
        .acc()
        .map(|r| (r, Figures::phases(r, phases)))
        .collect();
    let top = acc
        .iter()
        .map(|(_, f)| f.goodput())
        .fold(f64::MIN, f64::max);
    acc.into_iter()
        .filter(|(_, f)| f.goodput() >= top - TIE * reference)
        .min_by_key(|(_, f)| f.p99.unwrap_or(Duration::MAX))
        .map(|(r, _)| r)
}

/// From `from`, bins of `bin` up to `to`: the time after `from` from which every bin is `good`;
/// `None` if the last one is not.
pub(crate) fn settled(
    run: &Run,
    (from, to): (Duration, Duration),
    bin: Duration,
    good: impl Fn(&Figures) -> bool,
) -> Option<Duration> {
    let bins = ((to - from).as_nanos() / bin.as_nanos()) as u32;
    let verdicts: Vec<bool> = (0..bins)
        .map(|i| {
            let start = from + bin * i;
            good(&Figures::of(run, &[(start, start + bin)]))
        })
        .collect();
    match verdicts.iter().rposition(|g| !g) {
        None => Some(Duration::ZERO),
        Some(last_bad) if last_bad + 1 == verdicts.len() => None,
        Some(last_bad) => Some(bin * (last_bad as u32 + 1)),
    }
}

/// The mean of `value` over the samples taken in `phase`'s measured window.
pub(crate) fn mean_in(
    run: &Run,
    phase: &Phase,
    value: impl Fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    let values: Vec<f64> = samples_in(run, phase).filter_map(value).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The highest in-flight count sampled in `phase`'s measured window.
pub(crate) fn peak_in_flight(run: &Run, phase: &Phase) -> usize {
    samples_in(run, phase)
        .map(|s| s.in_flight)
        .max()
        .unwrap_or(0)
}

fn samples_in<'a>(run: &'a Run, phase: &Phase) -> impl Iterator<Item = &'a Sample> {
    let (from, to) = phase.window();
    run.samples
        .iter()
        .filter(move |s| s.at >= from && s.at < to)
}
