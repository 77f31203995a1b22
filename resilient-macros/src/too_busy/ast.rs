//! The arguments of `#[too_busy(...)]`, each kept with its span; each is a literal or an
//! expression (`OrExpr`). `valid` checks the shared rules on the literals.

use crate::driver::arguments;
use crate::value::{Count, Duration, Or, OrExpr};

arguments! {
    /// `#[too_busy(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct TooBusy {
        max_lag: OrExpr<std::time::Duration> = Or(Duration),
        max_in_flight: OrExpr<u32> = Or(Count::NEW),
        max_latency: OrExpr<std::time::Duration> = Or(Duration),
    }
}
