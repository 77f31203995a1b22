//! The arguments of `#[too_busy(...)]`, each kept with its span. Every argument is checked as it
//! is read (durations above zero, `max_in_flight` at least 1).

use syn::LitStr;

use crate::driver::arguments;
use crate::value::{Count, Duration, Krate};

arguments! {
    /// `#[too_busy(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct TooBusy {
        max_lag: std::time::Duration = Duration,
        max_in_flight: u32 = Count::NEW,
        max_latency: std::time::Duration = Duration,
        #[darling(rename = "crate")]
        krate: LitStr = Krate,
    }
}
