//! The wait before an attempt that replaces a failed one: exponential backoff with full jitter
//! (AWS Architecture Blog, "Exponential Backoff And Jitter"): a call's n-th wait (n from 0) is
//! uniform in `[0, min(max, base * factor^n))`. The race starts that attempt at the end of the
//! wait or at the next staggered start, whichever comes first, and never at or past the deadline.
//!
//! The defaults scale with the call: `base` is a quarter of `min(after, total)` (of the `after`
//! learned so far with `after = "pNN"`), `factor` is `backoff_factor`'s default, and there is no
//! `max` of its own (the next staggered start, at most `after` away, bounds each wait; the
//! deadline bounds them all). With two retries growing twofold, the waits of a call whose attempts
//! all fail fast then add at most three quarters of `after` (on average three eighths): a failing
//! upstream is given room to recover and retries are spread, while a retry after one transient
//! error still comes well before the staggered start would have brought it.

use std::time::Duration;

use crate::random;

#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Backoff {
    /// False: an attempt that replaces a failed one starts at once.
    on: bool,
    /// The first wait's bound; `None`: a quarter of `min(after, total)`.
    base: Option<Duration>,
    /// At least 1 (NaN and anything below count as 1); may be infinite.
    factor: f64,
    max: Duration,
}

impl Backoff {
    /// Off: an attempt that replaces a failed one starts at once.
    pub(crate) const OFF: Backoff = Backoff {
        on: false,
        base: None,
        factor: 1.0,
        max: Duration::MAX,
    };

    /// On, each bound `factor` times the one before, from a base of a quarter of
    /// `min(after, total)` (until [`base`](Self::base) gives one), with no `max` of its own.
    pub(crate) const fn growing(factor: f64) -> Self {
        Backoff {
            on: true,
            ..Backoff::OFF
        }
        .factor(factor)
    }

    pub(crate) const fn base(self, base: Duration) -> Self {
        Backoff {
            on: true,
            base: Some(base),
            ..self
        }
    }

    pub(crate) const fn factor(self, factor: f64) -> Self {
        // NaN fails `factor >= 1.0`.
        let factor = if factor >= 1.0 { factor } else { 1.0 };
        Backoff {
            on: true,
            factor,
            ..self
        }
    }

    pub(crate) const fn max(self, max: Duration) -> Self {
        Backoff {
            on: true,
            max,
            ..self
        }
    }

    pub(crate) const fn is_on(&self) -> bool {
        self.on
    }

    /// The most a call's wait number `n` (from 0) may last, for a call whose `after` is `after`.
    pub(crate) fn bound(&self, n: u32, after: Duration, total: Duration) -> Duration {
        if !self.on {
            return Duration::ZERO;
        }
        let base = self.base.unwrap_or_else(|| after.min(total) / 4);
        if n == 0 || base.is_zero() || self.factor == 1.0 {
            return base.min(self.max);
        }
        // Finite and at least `base`, or infinite (then above any `max`).
        let grown = base.as_secs_f64() * self.factor.powi(n.min(i32::MAX as u32) as i32);
        if grown < self.max.as_secs_f64() {
            Duration::try_from_secs_f64(grown)
                .unwrap_or(self.max)
                .min(self.max)
        } else {
            self.max
        }
    }

    /// A wait drawn uniformly in `[0, bound)`.
    pub(crate) fn draw(bound: Duration) -> Duration {
        jitter(bound, (random::next_u64() >> 32) as u32)
    }
}

/// `bound * r / 2^32`, exactly and for any `bound` (`Duration::MAX` too): below `bound` unless it
/// is zero.
fn jitter(bound: Duration, r: u32) -> Duration {
    // At most about 1.8e28 ns times 2^32: within a u128.
    let nanos = (bound.as_nanos() * u128::from(r)) >> 32;
    let secs = (nanos / 1_000_000_000) as u64;
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn bounds_grow_by_the_factor_up_to_the_max() {
        let b = Backoff::growing(2.0).base(10 * MS).max(50 * MS);
        let bounds: Vec<_> = (0..5).map(|n| b.bound(n, 150 * MS, 450 * MS)).collect();
        assert_eq!(bounds, [10 * MS, 20 * MS, 40 * MS, 50 * MS, 50 * MS]);
        let b = Backoff::growing(3.0).base(10 * MS);
        assert_eq!(b.bound(2, 150 * MS, 450 * MS), 90 * MS);
    }

    #[test]
    fn the_default_base_is_a_quarter_of_after_or_total() {
        let b = Backoff::growing(2.0);
        assert_eq!(b.bound(0, 160 * MS, 450 * MS), 40 * MS);
        assert_eq!(b.bound(1, 160 * MS, 450 * MS), 80 * MS);
        // `after` past `total` (it never staggers): a quarter of `total`.
        assert_eq!(b.bound(0, Duration::MAX, 400 * MS), 100 * MS);
        assert_eq!(Backoff::OFF.bound(3, 160 * MS, 450 * MS), Duration::ZERO);
    }

    #[test]
    fn extreme_settings_saturate() {
        let huge = Backoff::growing(2.0).base(Duration::MAX);
        assert_eq!(huge.bound(0, MS, MS), Duration::MAX);
        assert_eq!(huge.bound(16, MS, MS), Duration::MAX);
        for factor in [f64::NAN, f64::NEG_INFINITY, -1.0, 0.0, 0.5] {
            let b = Backoff::growing(factor).base(10 * MS);
            assert_eq!(b.bound(16, MS, MS), 10 * MS, "{factor}");
        }
        let inf = Backoff::growing(f64::INFINITY).base(10 * MS);
        assert_eq!(inf.bound(1, MS, MS), Duration::MAX);
        assert_eq!(inf.max(MS * 70).bound(u32::MAX, MS, MS), 70 * MS);
        assert_eq!(
            Backoff::growing(f64::INFINITY)
                .base(Duration::ZERO)
                .bound(5, MS, MS),
            Duration::ZERO
        );
        assert_eq!(Backoff::growing(1e308).bound(16, 4 * MS, MS), Duration::MAX);
    }

    #[test]
    fn jitter_covers_zero_to_just_below_the_bound() {
        let bound = 100 * MS;
        assert_eq!(jitter(bound, 0), Duration::ZERO);
        assert_eq!(jitter(bound, 1 << 31), 50 * MS);
        assert!(jitter(bound, u32::MAX) < bound);
        assert!(jitter(bound, u32::MAX) > bound - Duration::from_nanos(100));
        assert!(jitter(Duration::MAX, u32::MAX) < Duration::MAX);
        assert_eq!(jitter(Duration::ZERO, u32::MAX), Duration::ZERO);
    }

    #[test]
    fn draws_are_seeded_by_the_thread_and_spread_over_the_bound() {
        random::seed(7);
        let first: Vec<_> = (0..8).map(|_| Backoff::draw(100 * MS)).collect();
        random::seed(7);
        let again: Vec<_> = (0..8).map(|_| Backoff::draw(100 * MS)).collect();
        assert_eq!(first, again);
        let draws: Vec<_> = (0..10_000).map(|_| Backoff::draw(100 * MS)).collect();
        assert!(draws.iter().all(|d| *d < 100 * MS));
        let mean = draws.iter().sum::<Duration>() / draws.len() as u32;
        assert!(mean > 45 * MS && mean < 55 * MS, "{mean:?}");
    }
}
