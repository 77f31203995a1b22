//! The simulated dependency the learner's tests run against: Poisson arrivals, a latency drawn
//! per call from one of several shapes, with or without a pool of slots (a FIFO queue in front of
//! them), a share of calls that fail at once, and changes of capacity, latency or load at set
//! times. Time is simulated (ns), so a minute of traffic takes milliseconds, and every run is the
//! same for the same seed.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

use super::super::*;

/// The bounds of a learned limit by default (`auto_min`, `auto_max`, `auto_initial`).
pub(super) fn default_bounds() -> Bounds {
    crate::too_busy::TooBusy::builder("sim").bounds()
}
pub(super) const MS: f64 = 1e6;
pub(super) const S: f64 = 1e9;

/// splitmix64.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub(super) fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub(super) fn normal(&mut self) -> f64 {
        let (a, b) = (self.unit(), self.unit());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}

/// How long the dependency takes to serve one call, in ms.
#[derive(Copy, Clone, Debug)]
pub(super) enum Shape {
    Constant(f64),
    /// `slow` with probability `share`, else `fast`.
    Bimodal {
        fast: f64,
        slow: f64,
        share: f64,
    },
    Lognormal {
        median: f64,
        sigma: f64,
    },
    /// Pareto with scale `min` and shape `alpha`, capped at `cap`.
    Pareto {
        min: f64,
        alpha: f64,
        cap: f64,
    },
}

impl Shape {
    pub(super) fn draw(self, rng: &mut Rng) -> f64 {
        match self {
            Shape::Constant(ms) => ms,
            Shape::Bimodal { fast, slow, share } => {
                if rng.unit() < share {
                    slow
                } else {
                    fast
                }
            }
            Shape::Lognormal { median, sigma } => median * (sigma * rng.normal()).exp(),
            Shape::Pareto { min, alpha, cap } => (min / rng.unit().powf(1.0 / alpha)).min(cap),
        }
    }

    pub(super) fn mean(self) -> f64 {
        let mut rng = Rng(7);
        (0..100_000).map(|_| self.draw(&mut rng)).sum::<f64>() / 100_000.0
    }

    pub(super) fn p99(self) -> f64 {
        let mut rng = Rng(7);
        let mut v: Vec<f64> = (0..100_000).map(|_| self.draw(&mut rng)).collect();
        v.sort_by(f64::total_cmp);
        v[99_000]
    }
}

/// What changes at a time of the run.
#[derive(Copy, Clone, Debug)]
pub(super) enum Change {
    Slots(usize),
    /// Every call takes this many times as long.
    Slower(f64),
}

#[derive(Clone, Debug)]
pub(super) struct Scenario {
    pub(super) shape: Shape,
    /// `None`: no capacity limit.
    pub(super) slots: Option<usize>,
    /// Calls per second.
    pub(super) rate: f64,
    /// The share of calls that fail at once (1 µs), without taking a slot.
    pub(super) fail_fast: f64,
    pub(super) secs: f64,
    pub(super) changes: Vec<(f64, Change)>,
    /// `Some(n)`: a closed loop of `n` callers instead of Poisson arrivals (`rate` unused), each
    /// calling again as its call ends, or [`RETRY_NS`] after a refusal (blocking callers).
    pub(super) callers: Option<usize>,
}

/// How long a closed-loop caller waits after a refusal before it calls again.
pub(super) const RETRY_NS: u64 = 1_000_000;

impl Scenario {
    pub(super) fn new(shape: Shape, slots: Option<usize>, rate: f64) -> Self {
        Scenario {
            shape,
            slots,
            rate,
            fail_fast: 0.0,
            secs: 20.0,
            changes: Vec::new(),
            callers: None,
        }
    }

    /// Calls per second the pool serves.
    pub(super) fn capacity(&self) -> f64 {
        self.slots.unwrap_or(usize::MAX) as f64 / (self.shape.mean() / 1e3)
    }
}

#[derive(Debug, Default)]
pub(super) struct Run {
    /// Successful calls: when they came, how long they took (s, ms).
    pub(super) ok: Vec<(f64, f64)>,
    /// When refused calls came (s).
    pub(super) refused: Vec<f64>,
    /// The limit after each window (s, limit).
    pub(super) limits: Vec<(f64, u32)>,
    pub(super) whys: Vec<(f64, Why)>,
    /// Slot-seconds held in each second of the run.
    pub(super) busy: Vec<f64>,
}

impl Run {
    /// Successful calls per second, by completion, from `a` to `b` s.
    pub(super) fn goodput(&self, a: f64, b: f64) -> f64 {
        let n = self
            .ok
            .iter()
            .filter(|(at, ms)| (a..b).contains(&(at + ms / 1e3)))
            .count();
        n as f64 / (b - a)
    }

    pub(super) fn refused(&self, a: f64, b: f64) -> usize {
        self.refused.iter().filter(|t| (a..b).contains(*t)).count()
    }

    /// The accepted p99 of calls that came from `a` to `b` s, in ms.
    pub(super) fn p99(&self, a: f64, b: f64) -> f64 {
        let mut v: Vec<f64> = self
            .ok
            .iter()
            .filter(|(at, _)| (a..b).contains(at))
            .map(|&(_, ms)| ms)
            .collect();
        v.sort_by(f64::total_cmp);
        v[(v.len() * 99).div_ceil(100).max(1) - 1]
    }

    /// The mean number of busy slots from `a` to `b` s (whole seconds).
    pub(super) fn busy(&self, a: f64, b: f64) -> f64 {
        let seconds =
            &self.busy[(a as usize).min(self.busy.len())..(b as usize).min(self.busy.len())];
        seconds.iter().sum::<f64>() / (b - a)
    }

    pub(super) fn limits(&self, a: f64, b: f64) -> Vec<u32> {
        self.limits
            .iter()
            .filter(|(t, _)| (a..b).contains(t))
            .map(|&(_, l)| l)
            .collect()
    }
}

#[derive(Debug)]
pub(super) enum Event {
    Arrive,
    Done { call: usize },
    Change(Change),
}

pub(super) struct Call {
    pub(super) at: u64,
    pub(super) hold_ns: u64,
    pub(super) failed: bool,
}

/// Runs `scenario` under the learner (`learn`), or with no limit.
pub(super) fn simulate(scenario: &Scenario, learn: bool, seed: u64) -> Run {
    simulate_within(scenario, learn.then(default_bounds), seed)
}

/// Runs `scenario` under a learner within `bounds`, or with no limit.
pub(super) fn simulate_within(scenario: &Scenario, bounds: Option<Bounds>, seed: u64) -> Run {
    let mut rng = Rng(seed);
    let learn = bounds.is_some();
    let adaptive = Adaptive::new(bounds.unwrap_or_else(default_bounds), 0);
    let learning = AtomicBool::new(learn);
    let limit = AtomicU32::new(bounds.map_or(u32::MAX, |b| b.initial));
    let mut events = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |events: &mut BinaryHeap<_>, at: u64, event: Event| {
        seq += 1;
        events.push(Reverse((at, seq, EventBox(event))));
    };
    for caller in 0..scenario.callers.unwrap_or(1) {
        push(&mut events, 1 + caller as u64, Event::Arrive);
    }
    let closed = scenario.callers.is_some();
    for &(at, change) in &scenario.changes {
        push(&mut events, (at * S) as u64, Event::Change(change));
    }
    let (rate, mut slower, mut slots) = (scenario.rate, 1.0, scenario.slots);
    let mut calls: Vec<Call> = Vec::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let (mut in_flight, mut busy) = (0u32, 0usize);
    let mut run = Run::default();
    let end = (scenario.secs * S) as u64;
    run.busy = vec![0.0; scenario.secs.ceil() as usize + 1];
    let mut last = 0u64;
    while let Some(Reverse((now, _, EventBox(event)))) = events.pop() {
        // Slots held since the last event, counted in the second it started in.
        let second = ((last as f64 / S) as usize).min(run.busy.len() - 1);
        run.busy[second] += busy as f64 * (now - last) as f64 / S;
        last = now;
        match event {
            Event::Arrive => {
                if now < end && !closed {
                    let gap = -rng.unit().ln() / rate * S;
                    push(&mut events, now + gap.max(1.0) as u64, Event::Arrive);
                }
                // Drawn for every call, refused or not, so that runs see the same calls.
                let hold_ns = (scenario.shape.draw(&mut rng) * slower * MS) as u64;
                let failed = rng.unit() < scenario.fail_fast;
                if in_flight >= limit.load(Relaxed) {
                    if learn {
                        adaptive.refused();
                    }
                    run.refused.push(now as f64 / S);
                    if closed && now < end {
                        push(&mut events, now + RETRY_NS, Event::Arrive);
                    }
                    continue;
                }
                in_flight += 1;
                let call = calls.len();
                calls.push(Call {
                    at: now,
                    hold_ns,
                    failed,
                });
                if failed {
                    push(&mut events, now + 1_000, Event::Done { call });
                } else if slots.is_none_or(|n| busy < n) {
                    busy += 1;
                    push(&mut events, now + hold_ns, Event::Done { call });
                } else {
                    queue.push_back(call);
                }
            }
            Event::Done { call } => {
                let c = &calls[call];
                if learn {
                    if let Some(verdict) =
                        adaptive.sample(now - c.at, in_flight, c.failed, now, &learning, &limit)
                    {
                        run.limits.push((now as f64 / S, verdict.limit));
                        if let Some(why) = verdict.why {
                            run.whys.push((now as f64 / S, why));
                        }
                    }
                }
                in_flight -= 1;
                if closed && now < end {
                    push(&mut events, now, Event::Arrive);
                }
                if c.failed {
                    continue;
                }
                run.ok.push((c.at as f64 / S, (now - c.at) as f64 / MS));
                busy -= 1;
                while slots.is_none_or(|n| busy < n) {
                    let Some(next) = queue.pop_front() else { break };
                    busy += 1;
                    push(
                        &mut events,
                        now + calls[next].hold_ns,
                        Event::Done { call: next },
                    );
                }
            }
            Event::Change(change) => match change {
                Change::Slots(n) => {
                    slots = Some(n);
                    while busy < n {
                        let Some(next) = queue.pop_front() else { break };
                        busy += 1;
                        push(
                            &mut events,
                            now + calls[next].hold_ns,
                            Event::Done { call: next },
                        );
                    }
                }
                Change::Slower(by) => slower = by,
            },
        }
    }
    run
}

/// Events ordered by time and sequence alone.
#[derive(Debug)]
pub(super) struct EventBox(Event);

impl PartialEq for EventBox {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for EventBox {}
impl PartialOrd for EventBox {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for EventBox {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}
