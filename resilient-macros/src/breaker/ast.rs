//! The arguments of `#[breaker(...)]`, each kept with its span.

use syn::{Expr, LitStr};

use crate::driver::arguments;
use crate::value::{Count, Duration, Expression, Number, Str};

arguments! {
    /// `#[breaker(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct Breaker {
        name: LitStr = Str("payments"),
        key: Expr = Expression("host"),
        error_threshold: u32 = Count::NEW,
        error_window: std::time::Duration = Duration,
        error_timeout: std::time::Duration = Duration,
        success_threshold: u32 = Count::NEW,
        capacity: f64 = Number("0.75"),
        timeout: std::time::Duration = Duration,
        half_open_timeout: std::time::Duration = Duration,
        failure_rate: f64 = Number("0.5"),
        min_calls: u32 = Count::NEW,
        half_open_calls: u32 = Count::NEW,
        backoff: f64 = Number("2.0"),
        max_error_timeout: std::time::Duration = Duration,
        count_if: Expr = Expression("is_transient"),
        idle_timeout: std::time::Duration = Duration,
        max_keys: u64 = Count::NEW,
    }
}
