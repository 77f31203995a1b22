//! The metrics' striped values beside the plain count (`crate::stripes::Striped`): a level that
//! moves both ways, and buffered samples.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

pub(crate) use crate::stripes::Striped;
use crate::stripes::{mine, stripes, Padded};

/// A level that moves up and down (calls in flight): each move is one atomic add on the
/// thread's own stripe, a move down possibly on another thread than its move up, so a stripe may
/// be negative; the level is the sum.
pub(crate) struct StripedLevel {
    stripes: Box<[Padded<AtomicI64>]>,
}

impl StripedLevel {
    pub(crate) fn new() -> Self {
        StripedLevel { stripes: stripes() }
    }

    #[inline(always)]
    pub(crate) fn up(&self) {
        mine(&self.stripes).fetch_add(1, Relaxed);
    }

    #[inline(always)]
    pub(crate) fn down(&self) {
        mine(&self.stripes).fetch_sub(1, Relaxed);
    }

    /// The sum of the stripes, read one after another while calls move them: exact when nothing
    /// moves, and never below 0 (a call's move down read before its move up on another stripe
    /// would make it so).
    pub(crate) fn level(&self) -> i64 {
        self.stripes
            .iter()
            .fold(0i64, |sum, stripe| sum.wrapping_add(stripe.0.load(Relaxed)))
            .max(0)
    }
}

/// Samples buffered per stripe, up to [`Buffered::CAP`] each: a thread pushes onto its own
/// stripe's buffer under a lock that only a reader or the rare thread sharing the stripe
/// contends; its first sample allocates the buffer, which is reused from then on.
pub(crate) struct Buffered {
    stripes: Box<[Padded<Mutex<Vec<f64>>>]>,
}

impl Buffered {
    /// Samples a stripe holds before the thread that fills it hands them on.
    pub(crate) const CAP: usize = 512;

    pub(crate) fn new() -> Self {
        Buffered { stripes: stripes() }
    }

    /// Adds `sample` to this thread's stripe; when that fills it, `full` takes the stripe's
    /// samples (on this thread, with the stripe held) and the stripe starts again, empty.
    #[inline(always)]
    pub(crate) fn push(&self, sample: f64, full: impl FnOnce(&[f64])) {
        let mut buffer = lock(mine(&self.stripes));
        if buffer.capacity() == 0 {
            buffer.reserve_exact(Self::CAP);
        }
        buffer.push(sample);
        if buffer.len() >= Self::CAP {
            full(&buffer);
            buffer.clear();
        }
    }

    /// Takes every stripe's samples, handing each non-empty stripe's to `each`, outside its
    /// lock (the stripe gets a fresh buffer, allocated here rather than on a call's path).
    pub(crate) fn drain(&self, mut each: impl FnMut(&[f64])) {
        for stripe in self.stripes.iter() {
            let taken = {
                let mut buffer = lock(&stripe.0);
                if buffer.is_empty() {
                    continue;
                }
                std::mem::replace(&mut *buffer, Vec::with_capacity(Self::CAP))
            };
            each(&taken);
        }
    }
}

/// A stripe's buffer, whatever panicked while it was held (a buffer of samples has no invariant
/// to break).
fn lock(stripe: &Mutex<Vec<f64>>) -> MutexGuard<'_, Vec<f64>> {
    stripe.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stripe_count_is_a_power_of_two_from_4_to_16() {
        let n = Striped::new().stripes().count();
        assert!(n.is_power_of_two() && (4..=16).contains(&n), "{n} stripes");
    }

    #[test]
    fn threads_take_stripes_round_robin_and_lose_no_count() {
        let count = Striped::new();
        let level = StripedLevel::new();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        count.add(1);
                        level.up();
                    }
                });
            }
        });
        assert_eq!(count.total(), 80_000);
        assert_eq!(level.level(), 80_000);
        let used = count.stripes().filter(|&s| s > 0).count();
        assert!(used >= 2, "8 threads used {used} stripes");
        // Moves down on other threads than the moves up: stripes go negative, the sum is right.
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        level.down();
                    }
                });
            }
        });
        assert_eq!(level.level(), 0);
    }

    #[test]
    fn a_full_stripe_is_handed_on_by_the_thread_that_fills_it() {
        let samples = Buffered::new();
        let mut handed = Vec::new();
        for i in 0..Buffered::CAP + 3 {
            samples.push(i as f64, |full| handed.push(full.len()));
        }
        assert_eq!(handed, [Buffered::CAP]);
        let mut drained = Vec::new();
        samples.drain(|rest| drained.extend_from_slice(rest));
        let cap = Buffered::CAP as f64;
        assert_eq!(drained, [cap, cap + 1.0, cap + 2.0]);
        samples.drain(|_| panic!("nothing left"));
    }
}
