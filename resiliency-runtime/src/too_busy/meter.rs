//! [`Meter`]: a guard's metrics, what its call paths report to with no `cfg` of their own. With
//! the `metrics` feature, the handles of the guard's series (in `on`: one set per name, made at
//! the guard's first use) and the runtime's lag gauge; without it, a zero-sized handle whose
//! methods do nothing.

use super::too_busy::TooBusy;

#[cfg(feature = "metrics")]
mod on;

#[cfg(feature = "metrics")]
pub(crate) use on::{lag, Meter, MeterCell};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{lag, Meter, MeterCell};

impl TooBusy {
    /// This guard's metrics.
    #[inline(always)]
    pub(crate) fn meter(&self) -> &Meter {
        self.metrics.get(self.name())
    }
}

#[cfg(not(feature = "metrics"))]
mod off {
    use std::time::Duration;

    use crate::rejected::BusySignal;

    /// No metrics: every method does nothing.
    pub(crate) struct Meter;

    impl Meter {
        /// Whether these methods report anything.
        pub(crate) const ON: bool = false;

        #[inline(always)]
        pub(crate) fn admitted(&self, _counted: bool) {}

        #[inline(always)]
        pub(crate) fn refused(&self, _signal: &BusySignal) {}

        #[inline(always)]
        pub(crate) fn left(&self) {}

        #[inline(always)]
        pub(crate) fn limit(&self, _limit: u32) {}

        #[inline(always)]
        pub(crate) fn ran(&self, _ns: f64) {}
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

    #[inline(always)]
    pub(crate) fn lag(_lag: Duration) {}
}
