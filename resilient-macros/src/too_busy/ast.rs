//! The arguments of `#[too_busy(...)]`, each kept with its span. Durations are above zero and
//! `max_in_flight` at least 1 as they are read; `valid` checks the shared rules.

use crate::driver::arguments;
use crate::value::{Count, Duration};

arguments! {
    /// `#[too_busy(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct TooBusy {
        max_lag: std::time::Duration = Duration,
        max_in_flight: u32 = Count::NEW,
        max_latency: std::time::Duration = Duration,
    }
}
