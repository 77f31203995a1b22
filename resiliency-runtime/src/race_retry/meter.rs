//! [`Meter`]: a raced function's metrics, what its call paths report to with no `cfg` of their
//! own. With the `metrics` feature, the handles of its series (in `on`: one set per name, made at
//! the policy's first use); without it, a zero-sized handle whose methods do nothing.

use super::race_retry::RaceRetry;

#[cfg(feature = "metrics")]
mod on;

#[cfg(feature = "metrics")]
pub(crate) use on::{Meter, MeterCell};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{Meter, MeterCell};

impl RaceRetry {
    /// This function's metrics.
    #[inline(always)]
    pub(crate) fn meter(&self) -> &Meter {
        self.metrics.get(self.name())
    }
}

#[cfg(not(feature = "metrics"))]
mod off {
    use std::time::Duration;

    /// No metrics: every method does nothing.
    pub(crate) struct Meter;

    impl Meter {
        #[inline(always)]
        pub(crate) fn started(&self) {}

        #[inline(always)]
        pub(crate) fn won(&self, _number: u32) {}

        #[inline(always)]
        pub(crate) fn answered_at_once(&self) {}

        #[inline(always)]
        pub(crate) fn failed(&self, _deadline: bool) {}

        #[inline(always)]
        pub(crate) fn budget_refused(&self) {}

        #[inline(always)]
        pub(crate) fn ran(&self, _elapsed: Duration) {}
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
