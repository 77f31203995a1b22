//! [`Meter`]: a rate limit's metrics, what its call paths report to with no `cfg` of their own.
//! With the `metrics` feature, the handles of its series (in `on`: one set per name, made at its
//! first call); without it, a zero-sized handle whose methods do nothing.

use super::rate_limit::RateLimit;

#[cfg(feature = "metrics")]
mod on;

#[cfg(feature = "metrics")]
pub(crate) use on::{Meter, MeterCell};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{Meter, MeterCell};

impl RateLimit {
    /// This rate limit's metrics.
    #[inline(always)]
    pub(crate) fn meter(&self) -> &Meter {
        self.metrics.get(self.name())
    }
}

#[cfg(not(feature = "metrics"))]
mod off {
    /// No metrics: every method does nothing.
    pub(crate) struct Meter;

    impl Meter {
        #[inline(always)]
        pub(crate) fn admitted(&self) {}

        #[inline(always)]
        pub(crate) fn waited(&self) {}

        #[inline(always)]
        pub(crate) fn refused(&self) {}
    }

    /// No handles to hold.
    pub(crate) struct MeterCell;

    impl MeterCell {
        pub(crate) const fn new() -> Self {
            MeterCell
        }

        #[inline(always)]
        pub(crate) fn get(&self, _name: &str) -> &Meter {
            &Meter
        }
    }
}
