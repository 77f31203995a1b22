//! Support for the code that the attributes generate. Not a public API: anything here may change
//! in any release.
//!
//! One file per concern: `breaker.rs`, `too_busy.rs`, `race_retry.rs`, `timeout.rs` and `rate_limit.rs` hold each attribute's
//! site (its policy, set up on first use) and the calls its expansion makes; this file what every
//! expansion shares. Nothing else in the runtime imports from here.

use std::future::Future;

mod breaker;
mod race_retry;
mod rate_limit;
mod timeout;
mod too_busy;

pub use breaker::{BreakerSite, KeyedSite, Site};
pub use race_retry::{
    attempt_arg, race_retry_unchecked, After, AttemptArg, Backoff, Budget, RaceCall, RaceSite,
};
pub use rate_limit::{RateLimitSite, RateSite};
pub use timeout::{LimitSite, TimeoutSite};
#[cfg(not(feature = "axum"))]
pub use too_busy::NeedsAxumFeature;
pub use too_busy::{into_response, BusySite, InFlight, TooBusySite};

pub use crate::__resiliency_hint_reader as hint_reader;
pub use crate::fallback::{
    blocking_output, counts_for, counts_for_blocking, fallback_arg, on_error, on_error_fn, output,
    refusal_attempts, refusals, refusals_blocking, retry_if_for, BlockingOutput, Cause, Failure,
    FallbackArg, FallbackOutput, FallbackSite, Later, Now, RefusalAttempts, Refusals,
};
pub use crate::race_retry::numbered;
pub use crate::rejected::FromRejected;
pub use crate::retry_hint::{HintOf, NoHint, ReadsHint};
pub use resiliency_rules::{
    breaker_settings, default_words, race_retry_settings, rate_limit_settings, timeout_settings,
    too_busy_settings, Rate,
};

/// The type an attribute's `async move` body must produce: generated code names it in a `return`
/// that never runs (`if false { return body_returns::<R>(); }`), so that the body's own result is
/// checked against the fn's return type, with its coercions (`Ok(&self.name)` for
/// `Result<&str, E>`). Never called.
#[inline(always)]
pub fn body_returns<R>() -> R {
    unreachable!("`body_returns` sits behind `if false`")
}

pub use crate::breaker::call::{every_error, no_hint};

/// The error type of a fn's return type, named by generated code as `<R as IsResult>::Err`.
pub trait IsResult {
    /// The `E` of `Result<T, E>`.
    type Err;
}

impl<T, E> IsResult for Result<T, E> {
    type Err = E;
}

/// Pins the output type of the body's future to the fn's return type, so that the compiler checks
/// a `count_if` predicate against the right error type.
#[inline(always)]
pub fn returns<R, F: Future<Output = R>>(body: F) -> F {
    body
}

/// The default name of a site: the path of the fn that holds `marker` (a fn item declared in its
/// body), e.g. `my_app::db::Pool::query`. Methods of different types thus get different names.
pub fn name_of<F>(marker: F) -> &'static str {
    let path = std::any::type_name_of_val(&marker);
    let path = path
        .rsplit_once("::")
        .map_or(path, |(fn_path, _marker)| fn_path);
    if path.contains("::{{closure}}") {
        Box::leak(path.replace("::{{closure}}", "").into_boxed_str())
    } else {
        path
    }
}

#[cfg(test)]
mod tests;
