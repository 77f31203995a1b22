//! The windows a closed breaker counts in: a ring of error times (count rule) and striped time
//! buckets of calls and errors (rate rule). Both are lock-free and allocation-free after creation.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::config::Rule;

pub(crate) enum Window {
    Count(CountWindow),
    Rate(RateWindow),
}

impl Window {
    pub(crate) fn clear(&self) {
        match self {
            Window::Count(window) => window.clear(),
            Window::Rate(window) => window.clear(),
        }
    }

    pub(crate) fn new(rule: Rule, window_ns: u64) -> Self {
        match rule {
            Rule::Count { threshold } => Window::Count(CountWindow::new(threshold)),
            Rule::Rate { .. } => Window::Rate(RateWindow::new(window_ns)),
        }
    }
}

/// The times of the last `threshold` errors. The count rule holds when the oldest of them is still
/// inside the window: then `threshold` errors fall within it.
pub(crate) struct CountWindow {
    /// Error times in ns since the breaker's base, plus one; 0 means "no error".
    ring: Box<[AtomicU64]>,
    /// Errors recorded so far; `seq % ring.len()` is the next slot.
    seq: AtomicU64,
}

impl CountWindow {
    fn new(threshold: u32) -> Self {
        CountWindow {
            ring: (0..threshold).map(|_| AtomicU64::new(0)).collect(),
            seq: AtomicU64::new(0),
        }
    }

    /// Records an error at `now`; true when `threshold` errors now lie at or after `floor`.
    pub(crate) fn record_error(&self, now: u64, floor: u64) -> bool {
        let n = self.ring.len() as u64;
        let seq = self.seq.fetch_add(1, Relaxed);
        self.ring[(seq % n) as usize].store(now, Relaxed);
        let oldest = self.ring[((seq + 1) % n) as usize].load(Relaxed);
        oldest != 0 && oldest >= floor
    }

    /// Forgets every error: done when the breaker closes or is reset.
    pub(crate) fn clear(&self) {
        for time in self.ring.iter() {
            time.store(0, Relaxed);
        }
    }

    /// Errors recorded at or after `floor`.
    pub(crate) fn recent(&self, floor: u64) -> u64 {
        self.ring
            .iter()
            .map(|t| t.load(Relaxed))
            .filter(|&t| t != 0 && t >= floor)
            .count() as u64
    }
}

const BUCKETS: u64 = 10;
const TAG_SHIFT: u32 = 42;
const CALLS_SHIFT: u32 = 21;
const COUNT_MAX: u64 = (1 << 21) - 1;
const TAG_MASK: u64 = (1 << 22) - 1;

/// Calls and errors in `BUCKETS` time buckets that together span the window. Each thread writes to
/// its own stripe, so two threads completing calls at once do not fight over one cache line.
pub(crate) struct RateWindow {
    bucket_ns: u64,
    stripes: Box<[Stripe]>,
}

/// One bucket word: the bucket's index (low 22 bits) | calls (21 bits) | errors (21 bits).
///
/// A 22-bit tag alone would let a bucket written 10 * 2^22 buckets ago pass for a current one, so
/// each stripe also keeps the latest bucket index it wrote: a stripe idle for a whole window is
/// skipped, and the first write after such an idle clears its stale buckets. Every word a reader
/// trusts is thus less than two windows old, far from any wrap of the tag.
#[repr(align(128))]
struct Stripe {
    buckets: [AtomicU64; BUCKETS as usize],
    latest: AtomicU64,
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn stripe_of_this_thread() -> usize {
    STRIPE.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_STRIPE.fetch_add(1, Relaxed);
            s.set(v);
        }
        v
    })
}

fn stripe_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16)
        .next_power_of_two()
}

impl RateWindow {
    fn new(window_ns: u64) -> Self {
        RateWindow {
            bucket_ns: (window_ns / BUCKETS).max(1),
            stripes: (0..stripe_count())
                .map(|_| Stripe {
                    buckets: Default::default(),
                    latest: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// Records one completed call at `now` (ns since the breaker's base).
    pub(crate) fn record(&self, now: u64, error: bool) {
        let index = now / self.bucket_ns;
        let tag = index & TAG_MASK;
        let stripe = &self.stripes[stripe_of_this_thread() & (self.stripes.len() - 1)];
        let latest = stripe.latest.load(Relaxed);
        if latest != index {
            if index >= latest + BUCKETS {
                // Idle for a whole window: what the buckets hold is history, even a word whose
                // 22-bit tag happens to match. (A thread sharing this stripe that writes in this
                // very instant may lose that one count.)
                for bucket in &stripe.buckets {
                    bucket.store(0, Relaxed);
                }
            }
            stripe.latest.fetch_max(index, Relaxed);
        }
        let cell = &stripe.buckets[(index % BUCKETS) as usize];
        let mut current = cell.load(Relaxed);
        loop {
            let (calls, errors) = if current >> TAG_SHIFT == tag {
                ((current >> CALLS_SHIFT) & COUNT_MAX, current & COUNT_MAX)
            } else {
                (0, 0)
            };
            let calls = (calls + 1).min(COUNT_MAX);
            let errors = (errors + error as u64).min(COUNT_MAX);
            let next = tag << TAG_SHIFT | calls << CALLS_SHIFT | errors;
            match cell.compare_exchange_weak(current, next, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// (calls, errors) in the buckets that make up the window ending at `now`.
    pub(crate) fn totals(&self, now: u64) -> (u64, u64) {
        let index = now / self.bucket_ns;
        let first = (index + 1).saturating_sub(BUCKETS);
        let (mut calls, mut errors) = (0, 0);
        for stripe in self.stripes.iter() {
            if stripe.latest.load(Relaxed) < first {
                continue;
            }
            for i in first..=index {
                let word = stripe.buckets[(i % BUCKETS) as usize].load(Relaxed);
                if word >> TAG_SHIFT == i & TAG_MASK {
                    calls += (word >> CALLS_SHIFT) & COUNT_MAX;
                    errors += word & COUNT_MAX;
                }
            }
        }
        (calls, errors)
    }

    /// Forgets every call: done when the breaker opens or is reset, so that it closes with a clean
    /// window.
    pub(crate) fn clear(&self) {
        for stripe in self.stripes.iter() {
            for bucket in &stripe.buckets {
                bucket.store(0, Relaxed);
            }
            stripe.latest.store(0, Relaxed);
        }
    }
}
