//! The arguments of `#[rate_limit(...)]`, each kept with its span: `rate` (a rate string such as
//! `"100/s"`, or an expression of type `resiliency::rate_limit::Rate`), which may also come first
//! without its name (`#[rate_limit("100/s")]`), `burst`, `max_wait` and `max_keys`; `key`, an
//! expression of the fn's arguments, for a limit per key.

use syn::LitStr;

use crate::value::Str;

resiliency_rules::rate_limit_settings!(crate::driver::arguments! {
    /// `#[rate_limit(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct RateLimit {
        name: LitStr = Str("partner-api"),
        key: syn::Expr = crate::value::Expression("client_ip"),
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::RateLimitOptions;
});
