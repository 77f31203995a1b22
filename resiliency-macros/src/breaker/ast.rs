//! The arguments of `#[breaker(...)]`, each kept with its span; a number or duration is a
//! literal or an expression (`OrExpr`).

use syn::{Expr, LitStr};

use crate::driver::arguments;
use crate::value::{Count, Duration, Expression, Number, Or, OrExpr, Str};

arguments! {
    /// `#[breaker(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct Breaker {
        name: LitStr = Str("payments"),
        key: Expr = Expression("host"),
        error_threshold: OrExpr<u32> = Or(Count::NEW),
        error_window: OrExpr<std::time::Duration> = Or(Duration),
        error_timeout: OrExpr<std::time::Duration> = Or(Duration),
        success_threshold: OrExpr<u32> = Or(Count::NEW),
        capacity: OrExpr<f64> = Or(Number("0.75")),
        timeout: OrExpr<std::time::Duration> = Or(Duration),
        half_open_timeout: OrExpr<std::time::Duration> = Or(Duration),
        failure_rate: OrExpr<f64> = Or(Number("0.5")),
        min_calls: OrExpr<u32> = Or(Count::NEW),
        half_open_calls: OrExpr<u32> = Or(Count::NEW),
        backoff: OrExpr<f64> = Or(Number("2.0")),
        max_error_timeout: OrExpr<std::time::Duration> = Or(Duration),
        count_if: Expr = Expression("is_transient"),
        idle_timeout: OrExpr<std::time::Duration> = Or(Duration),
        max_keys: OrExpr<u64> = Or(Count::NEW),
    }
}
