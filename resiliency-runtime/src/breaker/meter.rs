//! A breaker's metrics handle, [`Meter`]: the `metrics` feature's series (one set per name,
//! shared by a keyed family's breakers, in `on`) when the feature is on, and a zero-sized handle
//! whose methods do nothing when it is off. Call paths count outcomes through it with no `cfg`.

#[cfg(feature = "metrics")]
mod on;

#[cfg(feature = "metrics")]
pub(crate) use on::{handles, Handles, Meter};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{handles, Handles, Meter};

#[cfg(not(feature = "metrics"))]
mod off {
    use std::sync::Arc;

    use crate::breaker::{Breaker, State};

    /// The series of every breaker of a name: none without the `metrics` feature.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct Handles;

    pub(crate) fn handles(_name: &Arc<str>) -> Handles {
        Handles
    }

    /// One breaker's handle: counts nothing without the `metrics` feature.
    #[derive(Debug, Default)]
    pub(crate) struct Meter;

    impl Meter {
        pub(crate) fn new(_name: &Arc<str>) -> Self {
            Meter
        }

        pub(crate) fn of(_handles: Handles) -> Self {
            Meter
        }

        pub(crate) fn success(&self) {}

        pub(crate) fn error(&self) {}

        pub(crate) fn ignored(&self) {}

        pub(crate) fn refused(&self) {}

        pub(crate) fn timed_out(&self) {}

        pub(crate) fn slow(&self) {}

        pub(crate) fn changed(&self, _from: State, _to: State) {}
    }

    impl Breaker {
        /// The breaker leaves its family's state gauge (it was evicted): nothing to leave.
        pub(crate) fn uncount(&self) {}
    }
}
