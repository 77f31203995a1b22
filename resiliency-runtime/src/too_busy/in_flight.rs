//! The `max_in_flight` count: a slot is taken with one `fetch_add` (given back at once when the
//! count was already at the limit) and given back with one `fetch_sub`. Written once for the
//! guard's std atomic and, under `--cfg resiliency_loom`, for loom's, which `too_busy/loom.rs` checks.

use std::sync::atomic::Ordering::Relaxed;

/// An atomic count of calls in flight.
pub(crate) trait Count {
    /// Adds one; returns the count before.
    fn add(&self) -> u32;
    /// Takes one away.
    fn sub(&self);
}

impl Count for std::sync::atomic::AtomicU32 {
    #[inline(always)]
    fn add(&self) -> u32 {
        self.fetch_add(1, Relaxed)
    }

    #[inline(always)]
    fn sub(&self) {
        self.fetch_sub(1, Relaxed);
    }
}

#[cfg(resiliency_loom)]
impl Count for loom::sync::atomic::AtomicU32 {
    fn add(&self) -> u32 {
        self.fetch_add(1, Relaxed)
    }

    fn sub(&self) {
        self.fetch_sub(1, Relaxed);
    }
}

/// Takes a slot unless `limit` calls are in flight.
#[inline(always)]
pub(crate) fn take(count: &impl Count, limit: u32) -> bool {
    if count.add() >= limit {
        count.sub();
        return false;
    }
    true
}

/// Gives a slot back.
#[inline(always)]
pub(crate) fn give_back(count: &impl Count) {
    count.sub();
}
