//! [`Control`]: the controller of `max_in_flight = "auto"`, which judges each closed window (its
//! latency against the base latency, its queue, its failures) and decides the next limit: grow,
//! cut on a queue, check the cut, probe the base afresh. Pure (no clock, no atomics).

use super::*;

/// Why a window changed the limit: what tracing events and tests read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The share of failed calls spiked.
    Failures,
    /// Calls pressed against the limit with no queue to speak of.
    Grow,
    /// A queue: the limit is cut to the calls the dependency served, plus a little.
    Queue,
    /// A cut did not take a rise of latency away: it was no queue, the calls became slower.
    /// The limit is back where it was, and the new latency is `base`.
    Slower,
    /// A probe starts: the limit goes down for two windows, to measure `base` afresh.
    Probe,
    /// The probe is over: the limit is back where it was.
    ProbeOver,
}

/// A window's verdict: the limit to publish, why it moved, and how long the next window lasts.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Verdict {
    pub(crate) limit: u32,
    pub(crate) why: Option<Why>,
    pub(crate) baseline_ns: u64,
    pub(crate) next_window_ns: u64,
    /// The window was one of few calls: the next closes on a few ([`Adaptive::sample`]).
    pub(crate) short: bool,
}

/// A cut of the limit on a queue, and the window it was cut on: its latency, the wait (ns) it
/// showed against `base`, its calls in flight and its rate of successful calls (per ns).
#[derive(Copy, Clone, Debug, PartialEq)]
struct Cut {
    latency: Latency,
    wait: f64,
    in_flight: f64,
    rate: f64,
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Stage {
    /// Windows judged as they come.
    Steady,
    /// The limit just moved far: calls admitted under the one before may still be in flight
    /// (a window's peak above the limit says so), and windows are not judged until one shows
    /// none. After a cut, the limit before it, to go back to if the rise stays.
    Holding {
        cut: Option<Cut>,
    },
    /// After a cut: the window that says whether it took the rise away.
    Checking {
        cut: Cut,
    },
    /// A probe at `during`: windows while what queued drains (as [`Stage::Holding`]), then one
    /// measured.
    Settling {
        before: f64,
        during: f64,
    },
    Probing {
        before: f64,
        during: f64,
    },
}

/// The controller: the learned limit and what it learns from. Pure (no clock, no atomics), so
/// that its unit tests feed it windows.
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) bounds: Bounds,
    /// The learned limit (not rounded; within the bounds).
    limit: f64,
    stage: Stage,
    /// The latency of each of the last windows (a ring; `None` where none), and the one whose
    /// mean is `base`'s: a settled window clearly faster than the one before, or a probe's.
    latencies: [Option<Latency>; BASE_WINDOWS],
    next: usize,
    base_mean: Option<Latency>,
    /// The limit of the last window remembered.
    last_limit: u32,
    /// The usual share of failed calls (`None` until a window has shown one).
    usual_failed: Option<f64>,
    /// Windows in a row: with a queue, pressed with an ambiguous one, pressed with none, not
    /// pressed.
    queued: u32,
    ambiguous: u32,
    clear: u32,
    idle: u32,
    /// Pressed windows since the last probe.
    pressed: u32,
    /// `base` is in doubt: probes come sooner and deeper. And how many probes ran.
    searching: bool,
    probes: u32,
    /// No queue has been seen, or the limit has not bound since: growth is toward the demand.
    calm: bool,
}

impl Control {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Control {
            bounds,
            limit: f64::from(bounds.initial),
            stage: Stage::Steady,
            latencies: [None; BASE_WINDOWS],
            next: 0,
            base_mean: None,
            last_limit: 0,
            usual_failed: None,
            queued: 0,
            ambiguous: 0,
            clear: 0,
            idle: 0,
            pressed: 0,
            searching: false,
            probes: 0,
            calm: true,
        }
    }

    /// The limit calls are admitted under now.
    pub(crate) fn published(&self) -> u32 {
        let limit = match self.stage {
            Stage::Settling { during, .. } | Stage::Probing { during, .. } => during,
            _ => self.limit,
        };
        (limit.round() as u32).clamp(self.bounds.min, self.bounds.max)
    }

    /// The latency of successful calls when nothing queues: the lowest low percentile of the
    /// remembered windows and the mean of `base_mean` (`None`: no window yet). (Not the lowest
    /// mean: of many noisy means, the lowest is low by a few errors.)
    fn base(&self) -> Option<Latency> {
        let lows = self
            .latencies
            .iter()
            .flatten()
            .copied()
            .reduce(|a, b| Latency {
                low: a.low.min(b.low),
                at_least: a.at_least.min(b.at_least),
                at_most: a.at_most.min(b.at_most),
                ..a
            })?;
        let (mean, error) = self
            .base_mean
            .map_or((f64::INFINITY, 0.0), |b| (b.mean, b.error));
        Some(Latency {
            mean,
            error,
            ..lows
        })
    }

    /// How long slow calls take: the median high percentile of the remembered windows (0: none
    /// yet).
    fn slow_calls(&self) -> f64 {
        let mut highs: Vec<f64> = self.latencies.iter().flatten().map(|l| l.high).collect();
        if highs.is_empty() {
            return 0.0;
        }
        highs.sort_by(f64::total_cmp);
        highs[highs.len() / 2]
    }

    /// Remembers the latency of window `w`, under the limit `limit`. It sets `base`'s mean
    /// when clearly faster, or when `measured` (a probe's window), and only if the window's
    /// calls were admitted under its limit, it was long enough for slow calls to finish in it
    /// (once they are known), and the calls that finished in it account for those in flight: a
    /// window after the limit moved, or that slow calls outlast, counts more fast calls than it
    /// should.
    fn remember(&mut self, w: &Window, latency: Latency, limit: u32, measured: bool) {
        let known = self.latencies.iter().flatten().count() >= 2;
        let settled = std::mem::replace(&mut self.last_limit, limit) == limit || measured;
        // Calls that finished in the window account for those in flight (Little's law), not
        // only for the fast ones among them.
        let accounted = w.in_flight() * ACCOUNTED >= f64::from(w.peak);
        let long = w.span_ns as f64 >= WINDOW_LATENCIES * self.slow_calls();
        let whole = known && settled && accounted && long;
        let faster = self.base_mean.is_none_or(|base| latency.faster_than(&base));
        if whole && (faster || measured) {
            self.base_mean = Some(latency);
        }
        self.latencies[self.next] = Some(latency);
        self.next = (self.next + 1) % BASE_WINDOWS;
    }

    /// Forgets `base`: the latency is `latency` now.
    fn rebase(&mut self, latency: Latency) {
        self.latencies = [None; BASE_WINDOWS];
        self.latencies[0] = Some(latency);
        self.next = 1;
        self.base_mean = Some(latency);
    }

    /// New bounds (run-time settings): the limit is kept within them, what was learned stays.
    pub(crate) fn rebound(&mut self, bounds: Bounds) {
        self.bounds = bounds;
        self.limit = self.clamp(self.limit);
    }

    fn clamp(&self, limit: f64) -> f64 {
        limit.clamp(f64::from(self.bounds.min), f64::from(self.bounds.max))
    }

    /// The queue allowed under `limit`, in calls.
    fn allowance(limit: f64) -> f64 {
        (limit * ALLOWANCE_SHARE).max(MIN_ALLOWANCE)
    }

    /// Closes a window with at least one call: the next limit.
    pub(crate) fn close(&mut self, w: &Window) -> Verdict {
        let share = w.failed as f64 / w.calls.max(1) as f64;
        // The first window sets what is usual, and is judged by it.
        let usual = *self.usual_failed.get_or_insert(share);
        let spike = share >= SPIKE_SHARE && share >= usual + SPIKE_OVER_USUAL;
        self.usual_failed = Some(usual + USUAL_WEIGHT * (share - usual));
        let published = self.published();

        let why = match self.stage {
            _ if spike => {
                // Whatever was under way tells nothing now.
                if let Stage::Settling { before, .. } | Stage::Probing { before, .. } = self.stage {
                    self.limit = before;
                }
                self.stage = Stage::Steady;
                self.limit = (self.limit * FAILURE_CUT).max(self.floor(w, published));
                Some(Why::Failures)
            }
            // Until no call admitted under a higher limit is left.
            Stage::Holding { .. } | Stage::Settling { .. } if w.peak > published => None,
            Stage::Holding { cut } => {
                if let Some(latency) = w.latency {
                    self.remember(w, latency, published, false);
                }
                self.stage = match cut {
                    Some(cut) => Stage::Checking { cut },
                    None => Stage::Steady,
                };
                None
            }
            Stage::Settling { before, during } => {
                self.stage = Stage::Probing { before, during };
                None
            }
            Stage::Probing { before, during } => {
                let base = self.base().map_or(f64::INFINITY, |b| b.low);
                if let Some(latency) = w.latency {
                    self.remember(w, latency, published, true);
                    // Lower for certain: its upper bound below `base`.
                    self.searching = latency.at_most < (1.0 - SEARCH_FOUND) * base;
                }
                self.stage = Stage::Steady;
                // A probe that found a lower `base` found a queue above it: the limit grows back
                // from the probe's, not from the one that queued.
                self.limit = if self.searching { during } else { before };
                self.calm &= !self.searching;
                Some(Why::ProbeOver)
            }
            Stage::Checking { cut } => {
                self.stage = Stage::Steady;
                self.steady(w, published, Some(cut))
            }
            Stage::Steady => self.steady(w, published, None),
        };
        self.limit = self.clamp(self.limit);
        let base = self.base();
        // Few calls came in the window (a pool of a few slots, whose queued calls take long):
        // the next one is planned short and closes on a few calls ([`Adaptive::sample`]), so
        // that a queue is judged in calls, not in seconds. (Not while a probe is under way:
        // its windows are planned as calls take.)
        let short = w.calls < FEW_CALLS && !self.probing();
        let window = if short {
            0.0
        } else if let Stage::Settling { .. } = self.stage {
            w.mean_ns()
        } else {
            w.mean_ns().max(self.slow_calls())
        };
        Verdict {
            limit: self.published(),
            why,
            baseline_ns: base.map_or(0, |b| b.low as u64),
            next_window_ns: ((WINDOW_LATENCIES * window) as u64)
                .clamp(WINDOW.as_nanos() as u64, MAX_WINDOW.as_nanos() as u64),
            short,
        }
    }

    /// A floor for cuts: where calls stayed far below the limit (it did not bind), never below
    /// twice what they used, nor below `initial`.
    fn floor(&self, w: &Window, published: u32) -> f64 {
        if w.refused > 0 || u64::from(w.peak) * 2 >= u64::from(published) {
            0.0
        } else {
            f64::from(self.bounds.initial)
                .min(self.limit)
                .max(f64::from(w.peak) * 2.0)
        }
    }

    /// A window judged: `cut` is the cut whose effect this window shows.
    fn steady(&mut self, w: &Window, published: u32, cut: Option<Cut>) -> Option<Why> {
        let latency = w.latency?;
        self.remember(w, latency, published, false);
        let base = self.base().unwrap_or(latency);
        let pressed = w.refused > 0 || w.peak >= published;
        let queue = latency.queue(w.rate(), &base);
        let allowance = Self::allowance(self.limit);
        // Calls that finished in the window may have started long before it: never more than
        // the limit let in.
        let in_flight = w.in_flight().min(f64::from(published));

        if let Some(cut) = cut {
            // Had the wait cut on been a queue, the calls taken out of flight would have taken
            // it away, at the rate calls now complete (Little's law). What stayed is the calls
            // becoming slower. (A wait that rose well above the one cut on is news: the
            // capacity may have fallen as the cut took effect. It is cut on in turn.)
            let wait = latency.wait(&base);
            let drained = (cut.in_flight - in_flight).max(0.0) / w.rate().max(f64::MIN_POSITIVE);
            let expected = (cut.wait - drained).max(0.0);
            // Unless the rate says a queue for certain: the dependency serves as many calls per
            // second with fewer in flight (those taken out were waiting), where calls become
            // slower serve fewer, in proportion to the calls kept. A `base` measured while
            // calls queued makes the wait cut on look smaller than it was, and the cut leaves
            // part of it: a queue still, cut on in turn. The rate varies from window to window
            // as the mean latency does (a count of calls that slots held for random times), so
            // it tells only where both sides are beyond that: as high as before, within its
            // noise, and above the calls kept, beyond it.
            let kept = (in_flight / cut.in_flight.max(f64::MIN_POSITIVE)).min(1.0);
            let served = w.rate() / cut.rate.max(f64::MIN_POSITIVE);
            let noise = served * latency.spread().hypot(cut.latency.spread());
            let queued = served >= 1.0 - MEAN_BOUND * noise
                && served >= (1.0 + kept) / 2.0
                && served - kept > MEAN_BOUND * noise;
            if wait <= cut.wait * NEWS && wait > expected + SLOWER_SHARE * cut.wait && !queued {
                // What calls take now, at lower concurrency, is `base`; against it, the window
                // cut on held the queue that the cut took away, and the limit is what the
                // dependency served then.
                self.rebase(latency);
                let queue = cut.rate * cut.latency.wait(&latency);
                self.limit = (cut.in_flight - queue + allowance / 4.0).max(self.limit);
                self.queued = 0;
                return Some(Why::Slower);
            }
        }
        // Twice in a row (or right after a cut that took part of it away): a percentile near a
        // boundary of a latency with two modes flips now and then, a queue stays.
        self.queued = if queue > allowance {
            self.queued + 1
        } else {
            0
        };
        // Once, where it is far above the allowance: nothing that flips is that long.
        let sure = cut.is_some() || queue > BIG_QUEUE * allowance;
        if self.queued >= 2 || (sure && queue > allowance) {
            // What the dependency served, with a little queue left so that it never waits.
            let served = (in_flight - queue + allowance / 4.0)
                .max(in_flight * MAX_CUT)
                .max(self.floor(w, published));
            if served < self.limit {
                self.stage = Stage::Holding {
                    cut: Some(Cut {
                        latency,
                        wait: latency.wait(&base),
                        in_flight,
                        rate: w.rate(),
                    }),
                };
                self.limit = served;
                self.calm = false;
                self.queued = 0;
                self.clear = 0;
                return Some(Why::Queue);
            }
            return None;
        }
        if !pressed {
            // Calls came at fewer than the limit allowed, window after window: what it learned
            // of a queue is old.
            self.idle += 1;
            self.calm |= self.idle >= CLEAR_WINDOWS;
            self.ambiguous = 0;
            self.clear = 0;
            return None;
        }
        self.idle = 0;
        self.pressed += 1;
        // What a probe goes below: calls in flight, which the window's peak says better than
        // Little's law when slow calls outlast it.
        let busy = f64::from(w.peak).max(in_flight).min(f64::from(published));
        if self.searching && self.pressed >= SEARCH_EVERY {
            return Some(self.probe(busy * SEARCH_DEPTH));
        }
        // Sooner the first time: a limit that started above the dependency's capacity made
        // even the first windows queue, and `base` with them.
        let every = if self.probes == 0 {
            FIRST_PROBE
        } else {
            PROBE_EVERY
        };
        if self.pressed >= every {
            return Some(self.probe(busy * PROBE_DEPTH));
        }
        if queue > allowance / 2.0 {
            self.clear = 0;
            self.ambiguous += 1;
            if self.ambiguous >= AMBIGUOUS_WINDOWS {
                return Some(self.probe(busy * PROBE_DEPTH));
            }
            return None;
        }
        self.ambiguous = 0;
        let clear = queue <= allowance / 4.0;
        self.clear = if clear { self.clear + 1 } else { 0 };
        let first = self.latencies.iter().flatten().count() <= 1;
        if first && w.calls < FEW_CALLS && w.in_flight() * ACCOUNTED < f64::from(w.peak) {
            // A first window of few calls, most of those in flight not finished: nothing yet
            // tells a queue from how long calls take, and growing on it would put a queue on a
            // pool of a few slots before the next window can see one.
            return None;
        }
        let (limit, fast) = if self.calm && clear {
            let demand = (w.calls + w.refused) as f64 / w.calls.max(1) as f64;
            // Never more than doubled on the first window: nothing yet tells a queue.
            let most = if self.latencies.iter().flatten().count() > 1 {
                MAX_GROWTH
            } else {
                2.0
            };
            (self.limit * demand.clamp(FAST_GROWTH, most), true)
        } else if self.clear >= CLEAR_WINDOWS {
            // No queue for a while: the dependency may serve more than it did.
            (self.limit * FAST_GROWTH, true)
        } else if clear {
            (self.limit * GROWTH, false)
        } else {
            (self.limit, false)
        };
        self.limit = limit + 1.0;
        if fast {
            // Fast again after the next window, if that one shows no queue either.
            self.clear = CLEAR_WINDOWS - 1;
            self.stage = Stage::Holding { cut: None };
        }
        Some(Why::Grow)
    }

    /// Whether a probe is under way.
    fn probing(&self) -> bool {
        matches!(self.stage, Stage::Settling { .. } | Stage::Probing { .. })
    }

    /// Starts a probe at `during`.
    fn probe(&mut self, during: f64) -> Why {
        self.probes = self.probes.saturating_add(1);
        self.stage = Stage::Settling {
            before: self.limit,
            during: self.clamp(during.min(self.limit)),
        };
        self.pressed = 0;
        self.ambiguous = 0;
        self.clear = 0;
        Why::Probe
    }
}
