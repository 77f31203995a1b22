//! [`Meter`]: a time limit's metrics, what its call path reports to with no `cfg` of its own.
//! With the `metrics` feature, the handles of its series (in `on`: one set per name, made at its
//! first call); without it, a zero-sized handle whose methods do nothing.

use super::timeout::Timeout;

#[cfg(feature = "metrics")]
mod on;

#[cfg(feature = "metrics")]
pub(crate) use on::{Meter, MeterCell};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{Meter, MeterCell};

impl Timeout {
    /// This time limit's metrics.
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
        pub(crate) fn completed(&self) {}

        #[inline(always)]
        pub(crate) fn timed_out(&self) {}
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
