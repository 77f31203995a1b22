//! `max_in_flight = "auto"`: an in-flight limit learned from the latency and failures of the
//! guard's own calls.
//!
//! Calls only add to a window's counters ([`Adaptive::sample`]: two `fetch_add`s and two loads,
//! plus a `fetch_max`/`fetch_min` when a record is beaten). The call that finds the window over
//! takes the controller's lock without waiting (`try_lock`; another call already closing the
//! window is left to it), reads and resets the counters and runs [`Control::close`], which
//! decides the next limit; the guard publishes it where admission reads `max_in_flight`, so
//! admission costs what a fixed limit costs.
//!
//! The rule (see [`Control::close`]): the window's mean latency against a baseline (the lowest
//! latency seen over the last [`BASELINE_WINDOWS`] windows). Above [`TOLERANCE`] times the
//! baseline, the limit shrinks in proportion, to where the mean would meet the tolerance; within
//! it, and only when calls pressed against the limit, the limit grows (by a fifth while the mean
//! stays at the baseline, by half its square root near the tolerance). A spike in the share of
//! failed calls shrinks it by a quarter. While calls press against the limit, every
//! [`PROBE_EVERY`] windows one window runs at the limit divided by the tolerance, so that the
//! queue it may hold drains and the baseline is measured afresh; until a probe confirms the
//! baseline (at first, and after a probe that lowered it), one window in [`SEARCH_EVERY`] is a
//! probe at half the limit. Windows in which calls stayed far below the limit
//! never take it below `initial`, nor below twice what they used.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

pub use resilient_rules::{DEFAULT_AUTO_INITIAL, DEFAULT_AUTO_MAX, DEFAULT_AUTO_MIN};

/// A window lasts at least this long, and at least twice the baseline.
const WINDOW: Duration = Duration::from_millis(100);
/// A window closes with at least this many completed calls.
const WINDOW_CALLS: u64 = 10;
/// The mean latency may reach this multiple of the baseline before the limit shrinks.
const TOLERANCE: f64 = 1.5;
/// Below this multiple of the baseline, a pressed limit grows by a fifth (no queue at all).
const NO_QUEUE: f64 = 1.1;
/// The baseline is the lowest window minimum over this many windows.
pub(crate) const BASELINE_WINDOWS: usize = 50;
/// While calls press against the limit, one window in this many is a probe at the limit divided
/// by [`TOLERANCE`]: where the limit has settled, with the mean at the tolerance, that is about
/// what the dependency serves without a queue, so the queue drains while the dependency stays
/// busy.
pub(crate) const PROBE_EVERY: u32 = 20;
/// Until a probe finds the baseline where it was (the first, or after one that lowered it), one
/// window in this many is a probe, at half the limit: a baseline taken while calls queued (a
/// limit that started too high) is found out in a few probes.
const SEARCH_EVERY: u32 = 5;
/// A shrink never takes more than half the limit at once.
const MAX_CUT: f64 = 0.5;
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

/// One window's calls, as [`Control::close`] reads them.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub(crate) struct Window {
    /// Calls completed (or dropped) in the window.
    pub(crate) calls: u64,
    /// Their mean and lowest latency, in ns.
    pub(crate) mean_ns: f64,
    pub(crate) min_ns: u64,
    /// The most calls in flight seen as one completed.
    pub(crate) peak: u32,
    /// Calls that failed: an `Err`, a 5xx response, a panic, or dropped before they finished.
    pub(crate) failed: u64,
    /// Calls refused by the limit.
    pub(crate) refused: u64,
}

/// Why a window changed the limit: what tracing events and tests read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The mean latency passed the tolerance.
    Latency,
    /// The share of failed calls spiked.
    Failures,
    /// Calls pressed against the limit with latency within the tolerance.
    Grow,
    /// A probe window starts at the limit divided by the tolerance.
    Probe,
    /// The probe window is over.
    ProbeOver,
}

/// A window's verdict: the limit to publish, and why it moved.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Verdict {
    pub(crate) limit: u32,
    pub(crate) why: Option<Why>,
    pub(crate) baseline_ns: u64,
}

/// The controller: the learned limit and what it learns from. Pure (no clock, no atomics), so
/// that its unit tests feed it windows.
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) bounds: Bounds,
    /// The learned limit (not rounded; within the bounds).
    limit: f64,
    /// The lowest latency of each of the last windows (a ring), in ns.
    minima: [u64; BASELINE_WINDOWS],
    next: usize,
    /// The usual share of failed calls (`None` until a window has shown one).
    usual_failed: Option<f64>,
    /// The window after a probe: its mean still holds calls admitted while the queue was
    /// drained, too low to grow on.
    settling: bool,
    /// Windows since the last probe; the limit to go back to while one runs.
    since_probe: u32,
    probing: Option<f64>,
    /// The baseline is not confirmed yet: probes come sooner and deeper.
    searching: bool,
}

impl Control {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Control {
            bounds,
            limit: f64::from(bounds.initial),
            minima: [u64::MAX; BASELINE_WINDOWS],
            next: 0,
            usual_failed: None,
            settling: false,
            since_probe: 0,
            probing: None,
            searching: true,
        }
    }

    /// The limit calls are admitted under now.
    pub(crate) fn published(&self) -> u32 {
        let limit = match self.probing {
            Some(_) if self.searching => (self.limit * 0.5).floor(),
            Some(_) => (self.limit / TOLERANCE).floor(),
            None => self.limit.round(),
        };
        (limit as u32).clamp(self.bounds.min, self.bounds.max)
    }

    /// The lowest latency over the remembered windows, in ns (`u64::MAX`: none yet).
    pub(crate) fn baseline_ns(&self) -> u64 {
        self.minima.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// New bounds (run-time settings): the limit is kept within them, what was learned stays.
    pub(crate) fn rebound(&mut self, bounds: Bounds) {
        self.bounds = bounds;
        self.limit = self
            .limit
            .clamp(f64::from(bounds.min), f64::from(bounds.max));
    }

    /// Closes a window with at least one call: the next limit.
    pub(crate) fn close(&mut self, w: &Window) -> Verdict {
        let published = self.published();
        let baseline_before = self.baseline_ns();
        self.minima[self.next] = w.min_ns;
        self.next = (self.next + 1) % BASELINE_WINDOWS;
        let baseline = self.baseline_ns().max(1) as f64;

        let share = w.failed as f64 / w.calls.max(1) as f64;
        // The first window sets what is usual, and is judged by it.
        let usual = *self.usual_failed.get_or_insert(share);
        let spike = share >= SPIKE_SHARE && share >= usual + SPIKE_OVER_USUAL;
        self.usual_failed = Some(usual + USUAL_WEIGHT * (share - usual));
        let settling = std::mem::take(&mut self.settling);

        let pressed = w.refused > 0 || w.peak >= published;
        // Calls far below the limit: it did not bind, so it need not come down to them.
        let floor = if u64::from(w.peak) * 2 < u64::from(published) {
            f64::from(self.bounds.initial)
                .min(self.limit)
                .max(f64::from(w.peak) * 2.0)
        } else {
            0.0
        };
        let cut = |limit: f64, by: f64| (limit * by).max(floor).min(limit);

        let mut why = None;
        if let Some(before) = self.probing.take() {
            // The probe's minimum is in the baseline now: back to the limit before it.
            self.limit = if spike { before * FAILURE_CUT } else { before };
            self.since_probe = 0;
            self.settling = true;
            // A probe that lowered the baseline (by a tenth or more) found a queue that had
            // always been there: search on.
            self.searching = (w.min_ns as f64) < 0.9 * baseline_before as f64;
            why = Some(Why::ProbeOver);
        } else if spike {
            self.limit = cut(self.limit, FAILURE_CUT);
            why = Some(Why::Failures);
        } else if w.mean_ns > TOLERANCE * baseline {
            let by = (TOLERANCE * baseline / w.mean_ns).max(MAX_CUT);
            self.limit = cut(self.limit, by);
            why = Some(Why::Latency);
        } else if pressed && !settling {
            self.limit = if w.mean_ns <= NO_QUEUE * baseline {
                self.limit * 1.2 + 1.0
            } else {
                self.limit + (self.limit.sqrt() / 2.0).max(1.0)
            };
            why = Some(Why::Grow);
        }
        self.limit = self
            .limit
            .clamp(f64::from(self.bounds.min), f64::from(self.bounds.max));

        if pressed && why != Some(Why::ProbeOver) {
            self.since_probe += 1;
            let every = if self.searching {
                SEARCH_EVERY
            } else {
                PROBE_EVERY
            };
            if self.since_probe >= every {
                self.probing = Some(self.limit);
                why = Some(Why::Probe);
            }
        }
        Verdict {
            limit: self.published(),
            why,
            baseline_ns: baseline as u64,
        }
    }
}

/// A guard's learner: the window's counters, written by every call, and the controller.
#[derive(Debug)]
pub(crate) struct Adaptive {
    calls: AtomicU64,
    sum_ns: AtomicU64,
    min_ns: AtomicU64,
    peak: AtomicU32,
    failed: AtomicU64,
    refused: AtomicU64,
    /// When the window may close, in ns on the guard's clock.
    window_end: AtomicU64,
    control: Mutex<Control>,
}

impl Adaptive {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Adaptive {
            calls: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            min_ns: AtomicU64::new(u64::MAX),
            peak: AtomicU32::new(0),
            failed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            window_end: AtomicU64::new(0),
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
    /// on the guard's clock. When this closes a window, the window's verdict.
    /// The verdict is published in `limit` while `learning` holds, under the controller's lock.
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
        if ns < self.min_ns.load(Relaxed) {
            self.min_ns.fetch_min(ns, Relaxed);
        }
        if in_flight > self.peak.load(Relaxed) {
            self.peak.fetch_max(in_flight, Relaxed);
        }
        if failed {
            self.failed.fetch_add(1, Relaxed);
        }
        if calls < WINDOW_CALLS || now < self.window_end.load(Relaxed) {
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
        let window = Window {
            calls,
            mean_ns: self.sum_ns.swap(0, Relaxed) as f64 / calls as f64,
            min_ns: self.min_ns.swap(u64::MAX, Relaxed),
            peak: self.peak.swap(0, Relaxed),
            failed: self.failed.swap(0, Relaxed),
            refused: self.refused.swap(0, Relaxed),
        };
        let verdict = control.close(&window);
        if learning.load(Relaxed) {
            limit.store(verdict.limit, Relaxed);
        }
        let length = (WINDOW.as_nanos() as u64).max(verdict.baseline_ns.saturating_mul(2));
        self.window_end.store(now.saturating_add(length), Relaxed);
        Some(verdict)
    }

    /// Forgets the window in progress (the limit was switched to "auto" afresh).
    pub(crate) fn restart(&self, bounds: Bounds) {
        let mut control = self.control();
        *control = Control::new(bounds);
        self.calls.store(0, Relaxed);
        self.sum_ns.store(0, Relaxed);
        self.min_ns.store(u64::MAX, Relaxed);
        self.peak.store(0, Relaxed);
        self.failed.store(0, Relaxed);
        self.refused.store(0, Relaxed);
        self.window_end.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    //! The controller against a model of a dependency with `slots` slots of `service` each and
    //! a FIFO queue, driven window by window: with `demand` calls wanting to run, `min(demand,
    //! limit)` are in flight, and each waits `max(0, in_flight - slots) / slots` services before
    //! its own.

    use super::*;

    const BOUNDS: Bounds = Bounds {
        min: DEFAULT_AUTO_MIN,
        max: DEFAULT_AUTO_MAX,
        initial: DEFAULT_AUTO_INITIAL,
    };
    const MS: f64 = 1e6;

    /// One window of the model: `demand` calls want to run against `slots` slots.
    fn window(control: &Control, demand: u32, slots: u32, service_ms: f64) -> Window {
        let limit = control.published();
        let in_flight = demand.min(limit);
        let queued = in_flight.saturating_sub(slots) as f64 / slots as f64;
        let mean = service_ms * (1.0 + queued) * MS;
        // The calls that found a slot free at once (none when the queue never drains).
        let min = if in_flight <= slots {
            service_ms * MS
        } else {
            mean * 0.95
        };
        Window {
            calls: 20,
            mean_ns: mean,
            min_ns: min as u64,
            peak: in_flight,
            failed: 0,
            refused: u64::from(demand > limit),
        }
    }

    fn run(control: &mut Control, windows: usize, demand: u32, slots: u32) -> Vec<u32> {
        (0..windows)
            .map(|_| {
                let w = window(control, demand, slots, 10.0);
                control.close(&w).limit
            })
            .collect()
    }

    /// The published limits of the non-probe windows of `limits[from..]`, sorted.
    fn steady(limits: &[u32]) -> (u32, u32) {
        let hi = *limits.iter().max().unwrap();
        let lo = *limits.iter().filter(|&&l| l * 10 > hi * 6).min().unwrap();
        (lo, hi)
    }

    #[test]
    fn converges_above_the_slots_within_the_tolerance() {
        let mut control = Control::new(BOUNDS);
        let limits = run(&mut control, 100, 1000, 20);
        let (lo, hi) = steady(&limits[20..]);
        // Enough to fill the slots; not so much that the mean passes 1.5 services plus one step.
        assert!(lo >= 20, "{limits:?}");
        assert!(hi <= 36, "{limits:?}");
    }

    #[test]
    fn follows_the_capacity_down_within_a_few_windows_and_back_up() {
        let mut control = Control::new(BOUNDS);
        run(&mut control, 60, 1000, 20);
        let halved = run(&mut control, 60, 1000, 10);
        // Within 3 windows, at most 1.5 services of queue plus one step.
        assert!(halved[2..].iter().all(|&l| l <= 18), "{halved:?}");
        assert!(steady(&halved[10..]).0 >= 10, "{halved:?}");
        let recovered = run(&mut control, 60, 1000, 20);
        // Back to filling 20 slots within 10 windows (a second at 100 ms windows), but for the
        // probes (one window in 20).
        let below = recovered[10..].iter().filter(|&&l| l < 20).count();
        assert!(below <= 3, "{recovered:?}");
    }

    #[test]
    fn a_wrong_start_is_found_out_by_the_probes() {
        // 20 to start, 4 slots: every call queues from the first window, so the first minimum
        // is no baseline; the probes below the limit find the real one.
        let mut control = Control::new(BOUNDS);
        let limits = run(&mut control, 100, 1000, 4);
        let (_, hi) = steady(&limits[40..]);
        assert!(hi <= 8, "{limits:?}");
    }

    #[test]
    fn low_load_never_takes_the_limit_below_its_start() {
        let mut control = Control::new(BOUNDS);
        // Three calls at a time, whose latency doubles for reasons of their own (not queueing).
        for i in 0..200 {
            let service = if i < 50 { 10.0 } else { 20.0 };
            let mut w = window(&control, 3, 20, service);
            w.min_ns = (service * MS) as u64;
            let verdict = control.close(&w);
            assert!(verdict.limit >= BOUNDS.initial, "window {i}: {verdict:?}");
        }
    }

    #[test]
    fn an_unpressed_limit_does_not_grow() {
        let mut control = Control::new(BOUNDS);
        let limits = run(&mut control, 100, 5, 20);
        assert!(limits.iter().all(|&l| l == BOUNDS.initial), "{limits:?}");
    }

    #[test]
    fn stays_within_its_bounds() {
        let bounds = Bounds {
            min: 8,
            max: 30,
            initial: 16,
        };
        let mut control = Control::new(bounds);
        let up = run(&mut control, 100, 1000, 1000);
        assert!(up.iter().all(|&l| (8..=30).contains(&l)), "{up:?}");
        assert_eq!(*up.last().unwrap(), 30);
        // Before the baseline's memory runs out: a dependency with fewer slots than `min` gives
        // the probes no window without a queue, so past it the baseline drifts up.
        let down = run(&mut control, 30, 1000, 1);
        assert!(down.iter().all(|&l| (8..=30).contains(&l)), "{down:?}");
        assert_eq!(*down.last().unwrap(), 8);
        control.rebound(Bounds {
            min: 2,
            max: 4,
            initial: 3,
        });
        assert_eq!(control.published(), 4);
    }

    #[test]
    fn a_failure_spike_cuts_and_steady_failures_do_not() {
        let mut control = Control::new(BOUNDS);
        run(&mut control, 10, 1000, 100);
        let before = control.published();
        let mut w = window(&control, 1000, 100, 10.0);
        w.failed = 10;
        let after = control.close(&w);
        assert_eq!(after.why, Some(Why::Failures));
        assert!(after.limit < before);
        // A third of calls failing, window after window, is this function's usual.
        let mut cuts = 0;
        for _ in 0..100 {
            let mut w = window(&control, 1000, 100, 10.0);
            w.failed = 7;
            if control.close(&w).why == Some(Why::Failures) {
                cuts += 1;
            }
        }
        assert!(cuts < 10, "{cuts} cuts");
        assert!(control.published() > before, "{}", control.published());
    }
}
