//! The policies, declared once.
//!
//! `policies!` hands its rows to another macro, as a settings table does (see the `table`
//! module):
//!
//! ```text
//! resiliency_rules::policies!(path::to::consumer! { tokens the consumer wants first });
//! ```
//!
//! expands to `path::to::consumer! { tokens the consumer wants first <rows> }`, one row per
//! policy:
//!
//! ```text
//! /// What sites it stands for, in one line: the docs of the policy's variant.
//! Variant: name, env "NAME", options NameOptions { fields }, rules name, table name_settings;
//! ```
//!
//! `Variant` is the policy's name in Rust (`settings::Policy::Breaker`); `name` its name as files,
//! messages and attributes write it (`#[breaker]`, `[breaker."db"]`); `env` its spelling in
//! environment variables (`RESILIENCY_BREAKER__...`); `options` its options struct in this crate,
//! with in braces the fields, beside `name`, of the widest options a site of the policy may have
//! (a keyed breaker takes every breaker setting), on which a value given alone is judged;
//! `rules` the function that returns its options' violations; `table` its settings table's macro.

/// The policies: the list that the runtime's `settings::Policy`, its settings by name of each
/// policy and the attributes' names come from (see the crate's `policies` module).
#[macro_export]
#[doc(hidden)]
macro_rules! policies {
    ($($then:ident)::+ ! { $($before:tt)* }) => {
        $($then)::+! { $($before)*
            /// `#[breaker]` and the breakers registered from code.
            Breaker: breaker, env "BREAKER",
                options BreakerOptions { key: true }, rules breaker, table breaker_settings;
            /// `#[race_retry]`.
            RaceRetry: race_retry, env "RACE_RETRY",
                options RaceRetryOptions {}, rules race_retry, table race_retry_settings;
            /// `#[too_busy]`.
            TooBusy: too_busy, env "TOO_BUSY",
                options TooBusyOptions {}, rules too_busy, table too_busy_settings;
            /// `#[timeout]`.
            Timeout: timeout, env "TIMEOUT",
                options TimeoutOptions {}, rules timeout, table timeout_settings;
            /// `#[rate_limit]`.
            RateLimit: rate_limit, env "RATE_LIMIT",
                options RateLimitOptions { key: true }, rules rate_limit, table rate_limit_settings;
        }
    };
}
