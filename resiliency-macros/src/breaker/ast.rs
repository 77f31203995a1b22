//! The arguments of `#[breaker(...)]`, each kept with its span; a number or duration is a
//! literal or an expression (`OrExpr`).

use syn::{Expr, LitStr};

use crate::value::{Expression, Str};

resiliency_rules::breaker_settings!(crate::driver::arguments! {
    /// `#[breaker(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct Breaker {
        name: LitStr = Str("payments"),
        key: Expr = Expression("host"),
        count_if: Expr = Expression("is_transient"),
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::BreakerOptions;
});
