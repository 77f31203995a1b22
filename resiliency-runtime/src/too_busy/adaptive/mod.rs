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
//! completed in it (10, a second later still, where few come). Where a window counted fewer than
//! 10 calls (a pool of a few slots, whose queued calls take seconds), the next is planned 100 ms
//! long and closes on 5 calls once it lasted 200 ms: such a pool is judged every few completions,
//! not every few seconds. The first window is judged so too. (A window planned 100 ms because
//! calls are fast is not: it waits for its 40 calls, lest the slow calls of a latency with two
//! modes be left out of it.) From it the controller reads, over
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
//! dependency served against it (`Why::Slower`). Unless the calls completed per second say a
//! queue for certain: had the wait been a queue, the dependency serves as many with fewer calls
//! in flight; had each call become slower, it serves fewer, in proportion to the calls kept. A
//! rate as high as before within its noise (the standard error of the mean latency, as a share
//! of it: how much the calls that slots complete vary from window to window) and above the calls
//! kept beyond it is a queue that the cut took only part of (a `base` measured while calls queued
//! makes a queue look smaller than it is), and what is left is cut on in turn. Where a queue and
//! slower calls came together, the rate cannot tell, and the wait decides. A wait that rose well
//! above the one cut on is news (the capacity fell as the cut took effect) and is cut on in
//! turn. So a slower dependency costs a cut and a check, not a limit pinned at `auto_min` until a
//! baseline's memory runs out.
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
//!   latency with two modes flips now and then; a queue stays), or in one where it is above three
//!   times the allowance: a cut, as above, to no less than a quarter of the calls in flight;
//! * calls pressing against the limit (some refused, or as many in flight as it allows) with no
//!   queue: it grows, toward the demand (the calls that came, refused ones included, at most four
//!   times the limit, twice on the first window, and not on a first window of fewer than 10
//!   calls most of whose calls in flight had not finished) until a queue has been seen or while
//!   the limit has not bound for three windows; after, by a tenth, or by half after three
//!   windows in a row with none; with a little queue, by one call; a fast growth is followed by
//!   a hold;
//! * a spike in the share of failed calls cuts it by a quarter; a steady share moves nothing.
//!
//! Windows in which calls stayed far below the limit (under half of it) never take it below
//! `initial`, nor below twice what they used.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use histogram::{at_rank, bucket, variance, BUCKETS};

mod control;

#[cfg(test)]
use control::Why;
pub(crate) use control::{Control, Verdict};
mod histogram;
#[cfg(test)]
mod tests;

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
/// A queue this many times the allowance is cut on in one window.
const BIG_QUEUE: f64 = 3.0;
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

    /// The standard error of the mean, as a share of it: also how much the number of calls
    /// that slots held for such times complete varies from window to window.
    fn spread(&self) -> f64 {
        self.error / self.mean.max(f64::MIN_POSITIVE)
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
    /// The window in progress is the first, or follows one of few calls: it closes on
    /// [`MIN_SAMPLES`] calls once it lasted [`WINDOW`] past its end.
    short: AtomicBool,
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
            short: AtomicBool::new(true),
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
        // fewer but a window longer still; or, after a window of few calls, with a few.
        if now < end {
            return None;
        }
        let enough = calls >= WINDOW_CALLS
            || (calls >= FEW_CALLS && now >= end.saturating_add(MAX_WINDOW.as_nanos() as u64))
            || (calls >= MIN_SAMPLES && self.short(now, end));
        if !enough {
            return None;
        }
        self.close(now, learning, limit)
    }

    /// Whether the window ending at `end` is the first or follows one of few calls, and lasted
    /// [`WINDOW`] past its end: it closes on [`MIN_SAMPLES`] calls.
    #[cold]
    fn short(&self, now: u64, end: u64) -> bool {
        now >= end.saturating_add(WINDOW.as_nanos() as u64) && self.short.load(Relaxed)
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
        self.short.store(verdict.short, Relaxed);
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
        self.short.store(true, Relaxed);
        self.window_end
            .store(now.saturating_add(WINDOW.as_nanos() as u64), Relaxed);
    }
}
