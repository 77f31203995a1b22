//! Counts kept where they do not bounce between cores: a value split into stripes, each alone on
//! its cache line, a thread adding to its own stripe and a reader summing them all.
//!
//! A thread's stripe is its number (`crate::thread_number`: the lowest free at its first use,
//! given back when it ends) modulo the stripes, so the threads alive at once (a runtime's workers)
//! each have a stripe of their own while they are no more than the stripes; more share them, which
//! costs contention, never a count.
//! The number of stripes is the next power of two of the CPUs available, from 4 to 16.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::LazyLock;

/// A value alone on its cache line (128 bytes: x86's adjacent-line prefetch pairs lines of 64).
#[repr(align(128))]
#[derive(Debug, Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// Stripes per value: the next power of two of the CPUs available, from 4 to 16.
static STRIPES: LazyLock<usize> = LazyLock::new(|| {
    std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .next_power_of_two()
        .clamp(4, 16)
});

/// `n` fresh stripes, `n` the stripe count.
pub(crate) fn stripes<T: Default>() -> Box<[Padded<T>]> {
    (0..*STRIPES).map(|_| Padded::default()).collect()
}

/// The stripe of `stripes` this thread updates.
#[inline(always)]
pub(crate) fn mine<T>(stripes: &[Padded<T>]) -> &T {
    // A power of two long, so the mask keeps every stripe in use.
    &stripes[crate::thread_number::this_thread() & (stripes.len() - 1)].0
}

/// A count that only grows: an add is one atomic add on the thread's own stripe.
#[derive(Debug)]
pub(crate) struct Striped {
    stripes: Box<[Padded<AtomicU64>]>,
}

impl Striped {
    pub(crate) fn new() -> Self {
        Striped { stripes: stripes() }
    }

    #[inline(always)]
    pub(crate) fn add(&self, n: u64) {
        mine(&self.stripes).fetch_add(n, Relaxed);
    }

    /// The sum of the stripes. Each stripe only grows, so a later total is never smaller.
    pub(crate) fn total(&self) -> u64 {
        self.stripes
            .iter()
            .fold(0u64, |sum, stripe| sum.wrapping_add(stripe.0.load(Relaxed)))
    }

    /// The stripes, for tests that check which a thread wrote.
    #[cfg(test)]
    pub(crate) fn stripes(&self) -> impl Iterator<Item = u64> + '_ {
        self.stripes.iter().map(|stripe| stripe.0.load(Relaxed))
    }
}
