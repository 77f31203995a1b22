//! `max_in_flight = "auto"`: an in-flight limit learned from how the guard's own calls queue.
//!
//! # What it measures
//!
//! Calls only add to a window's counters ([`Adaptive::sample`]: a few `fetch_add`s, one of them
//! in a latency histogram of 16 buckets per power of two). The call that finds the window over
//! takes the controller's lock without waiting (`try_lock`; another call already closing the
//! window is left to it), reads and resets the counters and runs [`Control::close`], which
//! decides the next limit; the guard publishes it where admission reads `max_in_flight`, so
//! admission costs what a fixed limit costs.
//!
//! A window lasts at least 100 ms and twice what calls take (its mean, and the median of recent
//! windows' 90th percentiles, so that slow calls finish within it), and closes once 40 calls
//! completed in it (10, a second later still, where few come). From it the controller reads, over
//! the calls that **succeeded** only (a fast `Err` says nothing of how long the dependency takes
//! to serve a call: failed calls would make a failing dependency look fast), their rate, their
//! 10th percentile with the bounds its rank allows, their mean with its standard error, and the
//! calls in flight (Little's law over the window's calls), its peak and its refusals.
//!
//! # Queueing, not spread
//!
//! The limit exists to keep calls from waiting for a dependency that is busy. A call that waits
//! waits before its own service starts, so a queue delays **fast calls as much as slow ones**:
//! the low percentile rises by the wait. Spread does not move it: a bimodal dependency, a
//! lognormal or Pareto tail change a window's mean and its high percentiles, but a low percentile
//! measured at any concurrency is the same where nothing waits. The queue, in calls, is then by
//! Little's law `rate x wait`, with the wait measured against `base`, the same measures when
//! nothing queued ([`Latency::queue`]):
//!
//! * the rise of the low percentile, taken for certain only (the window's lower bound above
//!   `base`'s upper one: a percentile of `n` calls is an order statistic whose rank varies by
//!   `sqrt(n q (1 - q))` whatever the latency's shape, so the bounds are exact for any shape);
//! * or the rise of the mean beyond two standard errors, for a queue that delays only some calls
//!   (slots that finish together, so that some calls find one free and the low percentile does
//!   not move). Its `base` is one window's mean, not the lowest of many (the lowest of many noisy
//!   means is low by a few errors), taken from windows that were long enough for slow calls to
//!   finish in them and whose calls were admitted under their limit.
//!
//! This compares like with like: a window's percentile against the same percentile with nothing
//! queued, a mean against a mean. A design that sets a window's mean against the lowest latency
//! seen (a minimum RTT) measures how uneven latency is, not whether calls queue, and refuses a
//! healthy dependency whose latency is uneven by nature. Netflix's Gradient2 compares a
//! short-term against a long-term mean; Envoy's adaptive concurrency pins concurrency low to
//! measure a percentile of latency (its minRTT) and had to learn to discard samples from before
//! that window, and to measure again after repeated cuts when a dependency became slower for
//! good. Those are the two lessons kept here.
//!
//! # Telling a queue from slower calls
//!
//! A latency that rises because each call became slower (a dependency twice as slow for good)
//! looks like a queue in one window. A controller can only tell them apart by acting: every cut
//! is an experiment. After a cut to what the dependency served (`in flight - queue`, plus a
//! small allowance), the controller **holds** until no call admitted under the old limit is left
//! (a window's peak above the limit says some are), then **checks**: had the wait been a queue,
//! the calls taken out of flight would have taken it away at the rate calls complete. What stayed
//! is calls becoming slower: their new latency is `base`, and the limit is set to what the
//! dependency served against it (`Why::Slower`). A wait that rose well above the one cut on is
//! news (the capacity fell as the cut took effect) and is cut on in turn. So a slower dependency
//! costs a cut and a check, not a limit pinned at `auto_min` until a baseline's memory runs out.
//!
//! A `base` taken while calls queued (a limit that started above the dependency's capacity) is
//! found by **probes**: a window that settles and one measured at a lower limit, after the first
//! 10 windows in which calls pressed against the limit, then one in 50, and after 10 in a row with
//! a queue between half the allowance and the allowance. A probe that finds the latency lower for
//! certain keeps the lower limit and probes again soon, deeper.
//!
//! # The rule ([`Control::close`])
//!
//! With `allowance = max(1, limit / 10)` calls (a tenth of the latency):
//!
//! * a queue above the allowance in two windows in a row (a percentile near the boundary of a
//!   latency with two modes flips now and then; a queue stays): a cut, as above, to no less than a
//!   quarter of the calls in flight;
//! * calls pressing against the limit (some refused, or as many in flight as it allows) with no
//!   queue: it grows, toward the demand (the calls that came, refused ones included, at most four
//!   times the limit, twice on the first window) until a queue has been seen or while the limit
//!   has not bound for three windows; after, by a tenth, or by half after three windows in a row
//!   with none; with a little queue, by one call; a fast growth is followed by a hold;
//! * a spike in the share of failed calls cuts it by a quarter; a steady share moves nothing.
//!
//! Windows in which calls stayed far below the limit (under half of it) never take it below
//! `initial`, nor below twice what they used.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use histogram::{at_rank, bucket, variance, BUCKETS};

mod histogram;
#[cfg(test)]
mod tests;

pub use resiliency_rules::{DEFAULT_AUTO_INITIAL, DEFAULT_AUTO_MAX, DEFAULT_AUTO_MIN};

/// A window lasts at least this long, and at least [`WINDOW_LATENCIES`] times how long calls
/// take (the window's mean, and the slow calls' latency); at most [`MAX_WINDOW`].
const WINDOW: Duration = Duration::from_millis(100);
const WINDOW_LATENCIES: f64 = 2.0;
const MAX_WINDOW: Duration = Duration::from_secs(1);
/// A window closes with at least this many completed calls, or with [`FEW_CALLS`] once it
/// lasted [`MAX_WINDOW`] longer.
const WINDOW_CALLS: u64 = 40;
const FEW_CALLS: u64 = 10;
/// The percentiles of successful calls' latency read from a window: the low one measures the
/// queue, the high one how long slow calls take.
const LOW_QUANTILE: f64 = 0.1;
const HIGH_QUANTILE: f64 = 0.9;
/// How many standard deviations of its rank the bounds of a window's low percentile are from
/// it: a window's percentile is an order statistic, whose rank varies by `sqrt(n q (1 - q))`
/// among `n` calls whatever the latency's shape.
const RANK_BOUND: f64 = 2.0;
/// How many standard errors a window's mean latency must rise by to show a queue.
const MEAN_BOUND: f64 = 2.0;
/// A window whose calls in flight by Little's law are below its peak divided by this counted
/// too few of the calls in flight (the slow ones had not finished) to set `base`'s mean.
const ACCOUNTED: f64 = 4.0;
/// A window with fewer successful calls than this tells nothing of the queue.
const MIN_SAMPLES: u64 = 5;
/// The queue allowed, in calls: at least this many, and this share of the limit. A cut leaves
/// a quarter of it, so that the dependency never waits for a call.
const MIN_ALLOWANCE: f64 = 1.0;
const ALLOWANCE_SHARE: f64 = 0.1;
/// `base`'s low percentile is the lowest of this many windows.
const BASE_WINDOWS: usize = 30;
/// A cut never takes more than three quarters of the calls in flight.
const MAX_CUT: f64 = 0.25;
/// A cut after which the wait measured is above what the cut should have left by this share of
/// the wait cut on took less away than a queue would have: the calls became slower. A wait this
/// many times the one cut on is news, and is cut on.
const SLOWER_SHARE: f64 = 0.25;
const NEWS: f64 = 1.5;
/// While calls press against the limit, one window in this many starts a probe at
/// [`PROBE_DEPTH`] of the calls in flight, so that a `base` taken while calls queued is found
/// out.
pub(crate) const PROBE_EVERY: u32 = 50;
const FIRST_PROBE: u32 = 10;
const PROBE_DEPTH: f64 = 0.8;
/// While `base` is in doubt (a probe lowered it, or a rise turned out to be no queue), one
/// pressed window in this many starts a probe at [`SEARCH_DEPTH`]. An experiment that lowers
/// `base` by more than [`SEARCH_FOUND`] keeps it in doubt.
const SEARCH_EVERY: u32 = 3;
const SEARCH_DEPTH: f64 = 0.5;
const SEARCH_FOUND: f64 = 0.1;
/// Pressed windows in a row with a queue between half the allowance and the allowance, before
/// a probe says whether there is one.
const AMBIGUOUS_WINDOWS: u32 = 10;
/// Growth of a pressed limit with no queue: until a queue is seen (or after [`CLEAR_WINDOWS`]
/// windows in a row in which the limit did not bind), toward the demand (the calls that came,
/// refused ones included), by at least [`FAST_GROWTH`] and at most [`MAX_GROWTH`]; after, by
/// [`GROWTH`], or by [`FAST_GROWTH`] after [`CLEAR_WINDOWS`] pressed windows in a row with none.
const FAST_GROWTH: f64 = 1.5;
const MAX_GROWTH: f64 = 4.0;
const GROWTH: f64 = 1.1;
const CLEAR_WINDOWS: u32 = 3;
/// The cut after a spike of failures.
const FAILURE_CUT: f64 = 0.75;
/// A window's failed share is a spike when it is at least this...
const SPIKE_SHARE: f64 = 0.25;
/// ... and this much above the usual share (an exponential mean over windows).
const SPIKE_OVER_USUAL: f64 = 0.2;
/// The weight of a window's failed share in the usual share.
const USUAL_WEIGHT: f64 = 0.1;

/// The bounds of a learned limit, checked (`min <= initial <= max`, `min >= 1`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) initial: u32,
}

/// What a window's successful calls took, in ns: the low percentile, with the bounds that
/// their number allows ([`RANK_BOUND`]), the mean, with its standard error, and the high
/// percentile.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct Latency {
    pub(crate) low: f64,
    pub(crate) at_least: f64,
    pub(crate) at_most: f64,
    pub(crate) mean: f64,
    pub(crate) error: f64,
    pub(crate) high: f64,
}

impl Latency {
    /// The queue, in calls, of a window with this latency and `rate` successful calls per ns,
    /// against `base` (the latency when nothing queued): the wait its low percentile shows for
    /// certain (its lower bound above `base`'s upper one), or the wait its mean shows beyond
    /// [`MEAN_BOUND`] standard errors, whichever is more, times the rate (Little's law). The
    /// first sees a queue that delays every call, whatever the spread; the second a queue that
    /// delays some calls only (slots that finish together, so that some calls find one free).
    fn queue(&self, rate: f64, base: &Latency) -> f64 {
        let by_low = self.at_least - base.at_most;
        let by_mean = self.mean - base.mean - MEAN_BOUND * self.error.hypot(base.error);
        rate * by_low.max(by_mean).max(0.0)
    }

    /// The wait this latency shows against `base`, in ns: its low percentile's rise, or its
    /// mean's beyond [`MEAN_BOUND`] standard errors. What a cut is judged by, the window before
    /// it against the window after.
    fn wait(&self, base: &Latency) -> f64 {
        let by_mean = self.mean - base.mean - MEAN_BOUND * self.error.hypot(base.error);
        (self.low - base.low).max(by_mean).max(0.0)
    }

    /// Whether this mean is below `other`'s beyond both errors.
    fn faster_than(&self, other: &Latency) -> bool {
        self.mean + MEAN_BOUND * self.error.hypot(other.error) < other.mean
    }
}

/// One window's calls, as [`Control::close`] reads them.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct Window {
    /// Calls completed (or dropped) in the window, failed ones included.
    pub(crate) calls: u64,
    /// How long the window lasted, in ns.
    pub(crate) span_ns: u64,
    /// The summed latency of all its calls, in ns.
    pub(crate) sum_ns: f64,
    /// Calls that succeeded, and their latency (`None` with fewer than [`MIN_SAMPLES`]).
    pub(crate) ok: u64,
    pub(crate) latency: Option<Latency>,
    /// The most calls in flight seen as one completed.
    pub(crate) peak: u32,
    /// Calls that failed: an `Err`, a 5xx response, a panic, or dropped before they finished.
    pub(crate) failed: u64,
    /// Calls refused by the limit.
    pub(crate) refused: u64,
}

impl Window {
    /// Successful calls per ns.
    fn rate(&self) -> f64 {
        self.ok as f64 / self.span_ns.max(1) as f64
    }

    /// The mean number of calls in flight (Little's law: completions per ns times latency).
    fn in_flight(&self) -> f64 {
        self.sum_ns / self.span_ns.max(1) as f64
    }

    fn mean_ns(&self) -> f64 {
        self.sum_ns / self.calls.max(1) as f64
    }
}

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
        let window = if let Stage::Settling { .. } = self.stage {
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
            if wait <= cut.wait * NEWS && wait > expected + SLOWER_SHARE * cut.wait {
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
        if self.queued >= 2 || (cut.is_some() && queue > allowance) {
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

/// A guard's learner: the window's counters, written by every call, and the controller.
#[derive(Debug)]
pub(crate) struct Adaptive {
    calls: AtomicU64,
    sum_ns: AtomicU64,
    ok_sum_ns: AtomicU64,
    peak: AtomicU32,
    failed: AtomicU64,
    refused: AtomicU64,
    /// The latency of successful calls, by [`bucket`].
    latencies: Box<[AtomicU32]>,
    /// When the window started, and when it may close, in ns on the guard's clock.
    window_start: AtomicU64,
    window_end: AtomicU64,
    control: Mutex<Control>,
}

impl Adaptive {
    /// A learner whose first window starts at `now` on the guard's clock.
    pub(crate) fn new(bounds: Bounds, now: u64) -> Self {
        Adaptive {
            calls: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            ok_sum_ns: AtomicU64::new(0),
            peak: AtomicU32::new(0),
            failed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            latencies: (0..BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            window_start: AtomicU64::new(now),
            window_end: AtomicU64::new(now.saturating_add(WINDOW.as_nanos() as u64)),
            control: Mutex::new(Control::new(bounds)),
        }
    }

    /// The controller (a panic elsewhere while it was held leaves it usable: every update of
    /// it is whole before anything that could panic runs).
    pub(crate) fn control(&self) -> MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call refused by the limit.
    pub(crate) fn refused(&self) {
        self.refused.fetch_add(1, Relaxed);
    }

    /// A call is over after `ns`, with `in_flight` calls in flight (itself included); at `now`
    /// on the guard's clock. When this closes a window while `learning` holds, the window's
    /// verdict, published in `limit` under the controller's lock.
    #[inline]
    pub(crate) fn sample(
        &self,
        ns: u64,
        in_flight: u32,
        failed: bool,
        now: u64,
        learning: &AtomicBool,
        limit: &AtomicU32,
    ) -> Option<Verdict> {
        let calls = self.calls.fetch_add(1, Relaxed) + 1;
        self.sum_ns.fetch_add(ns, Relaxed);
        if in_flight > self.peak.load(Relaxed) {
            self.peak.fetch_max(in_flight, Relaxed);
        }
        if failed {
            self.failed.fetch_add(1, Relaxed);
        } else {
            self.ok_sum_ns.fetch_add(ns, Relaxed);
            self.latencies[bucket(ns)].fetch_add(1, Relaxed);
        }
        let end = self.window_end.load(Relaxed);
        // Over once it lasted long enough, with enough calls; or, where few calls come, with
        // fewer but a window longer still.
        let enough = calls >= WINDOW_CALLS
            || (calls >= FEW_CALLS && now >= end.saturating_add(MAX_WINDOW.as_nanos() as u64));
        if now < end || !enough {
            return None;
        }
        self.close(now, learning, limit)
    }

    #[cold]
    #[inline(never)]
    fn close(&self, now: u64, learning: &AtomicBool, limit: &AtomicU32) -> Option<Verdict> {
        let mut control = match self.control.try_lock() {
            Ok(control) => control,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        // Another call may have closed this window while the lock was being taken.
        if now < self.window_end.load(Relaxed) {
            return None;
        }
        let calls = self.calls.swap(0, Relaxed);
        if calls == 0 {
            return None;
        }
        let counts: Vec<u64> = self
            .latencies
            .iter()
            .map(|n| u64::from(n.swap(0, Relaxed)))
            .collect();
        let ok: u64 = counts.iter().sum();
        let ok_sum_ns = self.ok_sum_ns.swap(0, Relaxed) as f64;
        let window = Window {
            calls,
            span_ns: now.saturating_sub(self.window_start.swap(now, Relaxed)),
            sum_ns: self.sum_ns.swap(0, Relaxed) as f64,
            ok,
            latency: (ok >= MIN_SAMPLES).then(|| {
                let rank = LOW_QUANTILE * ok as f64;
                let spread = RANK_BOUND * (rank * (1.0 - LOW_QUANTILE)).sqrt();
                let mean = ok_sum_ns / ok as f64;
                Latency {
                    low: at_rank(&counts, rank),
                    at_least: at_rank(&counts, rank - spread),
                    at_most: at_rank(&counts, rank + spread),
                    mean,
                    error: (variance(&counts, mean) / ok as f64).sqrt(),
                    high: at_rank(&counts, HIGH_QUANTILE * ok as f64),
                }
            }),
            peak: self.peak.swap(0, Relaxed),
            failed: self.failed.swap(0, Relaxed),
            refused: self.refused.swap(0, Relaxed),
        };
        let verdict = control.close(&window);
        self.window_end
            .store(now.saturating_add(verdict.next_window_ns), Relaxed);
        // A window of calls admitted while the limit was learned may close after it became a
        // fixed one: its verdict is no one's.
        learning.load(Relaxed).then(|| {
            limit.store(verdict.limit, Relaxed);
            verdict
        })
    }

    /// Forgets the window in progress (the limit was switched to "auto" afresh).
    pub(crate) fn restart(&self, bounds: Bounds, now: u64) {
        let mut control = self.control();
        *control = Control::new(bounds);
        self.calls.store(0, Relaxed);
        self.sum_ns.store(0, Relaxed);
        self.ok_sum_ns.store(0, Relaxed);
        self.peak.store(0, Relaxed);
        self.failed.store(0, Relaxed);
        self.refused.store(0, Relaxed);
        for n in self.latencies.iter() {
            n.store(0, Relaxed);
        }
        self.window_start.store(now, Relaxed);
        self.window_end
            .store(now.saturating_add(WINDOW.as_nanos() as u64), Relaxed);
    }
}
