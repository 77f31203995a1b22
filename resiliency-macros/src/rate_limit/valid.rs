//! The rules of `#[rate_limit]`'s arguments: `resiliency_rules::rate_limit`, the same that
//! `RateLimit::builder` checks (`rate` required, `burst` at least 1, `max_wait` above zero),
//! each error pointing at the argument to change.

use resiliency_rules::RateLimitOptions;

use super::ast::RateLimit;
use crate::driver::{report, Errors, Given};

/// Every rule `#[rate_limit]`'s arguments break.
pub(crate) fn validate(args: &RateLimit, given: &Given, errors: &mut Errors) {
    let written = given.written(args);
    let name = args.name.as_ref().map(|name| name.value.value());
    let mut options = RateLimitOptions {
        name: name.as_deref(),
        written: &written,
        key: args.key.is_some(),
        ..RateLimitOptions::default()
    };
    args.fill(&mut options);
    report(resiliency_rules::rate_limit(&options), args, given, errors);
}
