//! The windows a closed breaker counts in: a ring of error times (count rule) and striped time
//! buckets of calls and errors (rate rule). Both are lock-free and both are allocated on first
//! use: the count rule's ring at the first error, the rate rule's buckets when the breaker starts
//! under the rate rule (or changes to it). A change of rule re-sizes them in place, so that the
//! calls' path reaches them without an indirection.
//!
//! This file holds the pair and the count rule's ring; `rate.rs` the rate rule's buckets.

mod rate;

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{fence, AtomicU32, AtomicU64};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;

pub(crate) use rate::{Clock, RateWindow};

use super::builder::Rule;

/// The windows of both rules; the breaker's rule says which one counts. `slow` counts slow calls
/// (`slow_call_duration`) as its errors, with no calls of its own: made at the first slow call,
/// so that a breaker that has none (most keys of a keyed family) holds one word for it.
pub(crate) struct Window {
    pub(crate) count: CountWindow,
    pub(crate) rate: RateWindow,
    slow: OnceLock<Box<RateWindow>>,
}

impl Window {
    pub(crate) fn new(rule: Rule, window_ns: u64) -> Self {
        let window = Window {
            count: CountWindow::new(match rule {
                Rule::Count { threshold } => threshold,
                Rule::Rate { .. } => 1,
            }),
            rate: RateWindow::new(window_ns),
            slow: OnceLock::new(),
        };
        if let Rule::Rate { .. } = rule {
            window.rate.allocate();
        }
        window
    }

    /// Forgets every count: done when the breaker opens, closes or is reset.
    pub(crate) fn clear(&self) {
        self.count.clear();
        self.rate.clear();
        if let Some(slow) = self.slow.get() {
            slow.clear();
        }
    }

    /// The window of slow calls, made now (over `window_ns`) if there was none.
    pub(crate) fn slow(&self, window_ns: u64) -> &RateWindow {
        self.slow
            .get_or_init(|| Box::new(RateWindow::new(window_ns)))
    }

    /// Slow calls in the window ending at `now`: 0 before the first.
    pub(crate) fn recent_slow(&self, now: u64) -> u64 {
        self.slow.get().map_or(0, |slow| slow.totals(now).1)
    }

    /// The rule is now `rule`, over `window_ns`: the counts start afresh, sized for it.
    pub(crate) fn reset(&self, rule: Rule, window_ns: u64) {
        if let Some(slow) = self.slow.get() {
            slow.resize(window_ns);
        }
        match rule {
            Rule::Count { threshold } => self.count.resize(threshold),
            Rule::Rate { .. } => {
                self.rate.resize(window_ns);
                self.rate.allocate();
            }
        }
        self.clear();
    }
}

/// The times of the last `threshold` errors. The count rule holds when the oldest of them is still
/// inside the window: then `threshold` errors fall within it.
///
/// The ring (8 bytes per unit of `threshold`) is allocated at the first error, so that the many
/// breakers of a keyed family that never see an error cost nothing for it.
pub(crate) struct CountWindow {
    threshold: AtomicU32,
    /// Error times in ns since the breaker's base, plus one; 0 means "no error". Replaced (and
    /// made again at the next error) when `threshold` changes.
    ring: ArcSwapOption<Box<[AtomicU64]>>,
    /// Errors recorded so far; `seq % ring.len()` is the next slot.
    seq: AtomicU64,
}

impl CountWindow {
    fn new(threshold: u32) -> Self {
        CountWindow {
            threshold: AtomicU32::new(threshold.max(1)),
            ring: ArcSwapOption::const_empty(),
            seq: AtomicU64::new(0),
        }
    }

    /// A new threshold: the ring is made again, of the new size, at the next error.
    fn resize(&self, threshold: u32) {
        self.threshold.store(threshold.max(1), Relaxed);
        self.ring.store(None);
    }

    /// Records an error at `now`; true when `threshold` errors now lie at or after `floor`.
    pub(crate) fn record_error(&self, now: u64, floor: u64) -> bool {
        let threshold = self.threshold.load(Relaxed) as usize;
        let current = self.ring.load();
        match &*current {
            Some(ring) if ring.len() == threshold => Self::record(ring, &self.seq, now, floor),
            _ => {
                let fresh: Arc<Box<[AtomicU64]>> =
                    Arc::new((0..threshold).map(|_| AtomicU64::new(0)).collect());
                let previous = self.ring.compare_and_swap(&current, Some(fresh.clone()));
                let won = match (&*previous, &*current) {
                    (None, None) => true,
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    _ => false,
                };
                // Another error made it first: count in the ring in place.
                let ring = match &*previous {
                    Some(seen) if !won => seen.clone(),
                    _ => fresh,
                };
                Self::record(&ring, &self.seq, now, floor)
            }
        }
    }

    /// Writes the error in its slot, then tells whether every slot holds an error at or after
    /// `floor`: the ring holds `threshold` errors, one per slot, so that is when `threshold`
    /// errors fall within the window.
    ///
    /// Reading only the slot after one's own (the oldest of the last `threshold` errors, when
    /// errors are recorded one at a time) is not enough under concurrency: an error that drew the
    /// next sequence number may already have written there. Reading the whole ring is exact:
    ///
    /// * Each slot holds the time of a distinct error (the latest of those that map to it:
    ///   `fetch_max`, so that a writer that drew its number earlier but writes later does not
    ///   put an older time back), so the ring never shows more errors than were recorded.
    /// * The fence orders each writer's slot before its reads: of errors recorded at once, the
    ///   one whose fence comes last sees every other's slot, so the error that completes the
    ///   count opens the breaker.
    ///
    /// The scan stops at the first slot outside the window, which in a window that is not full
    /// is usually the first one read: the one after the writer's own, the oldest.
    fn record(ring: &[AtomicU64], seq: &AtomicU64, now: u64, floor: u64) -> bool {
        let n = ring.len();
        let seq = (seq.fetch_add(1, Relaxed) % n as u64) as usize;
        ring[seq].fetch_max(now, Relaxed);
        fence(SeqCst);
        let inside = |t: &AtomicU64| {
            let t = t.load(Relaxed);
            t != 0 && t >= floor
        };
        ring[seq + 1..].iter().all(inside) && ring[..seq].iter().all(inside)
    }

    /// Forgets every error: done when the breaker closes or is reset.
    pub(crate) fn clear(&self) {
        if let Some(ring) = &*self.ring.load() {
            for time in ring.iter() {
                time.store(0, Relaxed);
            }
        }
    }

    /// Errors recorded at or after `floor`.
    pub(crate) fn recent(&self, floor: u64) -> u64 {
        match &*self.ring.load() {
            Some(ring) => ring
                .iter()
                .map(|t| t.load(Relaxed))
                .filter(|&t| t != 0 && t >= floor)
                .count() as u64,
            None => 0,
        }
    }
}
