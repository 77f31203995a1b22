//! The rules of `#[breaker]`'s arguments: `resiliency_rules::breaker`, the same that
//! `Breaker::builder` checks, each error pointing at the argument to change.

use resiliency_rules::BreakerOptions;

use super::ast::Breaker;
use crate::driver::{report, Errors, Given};
use crate::value::of;

/// Every rule `#[breaker]`'s arguments break.
pub(crate) fn validate(args: &Breaker, given: &Given, errors: &mut Errors) {
    let name = args.name.as_ref().map(|name| name.value.value());
    let written = given.written(args);
    let options = BreakerOptions {
        name: name.as_deref(),
        key: given.span("key").is_some(),
        error_threshold: of(&args.error_threshold),
        error_window: of(&args.error_window),
        error_timeout: of(&args.error_timeout),
        success_threshold: of(&args.success_threshold),
        capacity: of(&args.capacity),
        timeout: of(&args.timeout),
        half_open_timeout: of(&args.half_open_timeout),
        failure_rate: of(&args.failure_rate),
        min_calls: of(&args.min_calls),
        half_open_calls: of(&args.half_open_calls),
        backoff: of(&args.backoff),
        max_error_timeout: of(&args.max_error_timeout),
        idle_timeout: of(&args.idle_timeout),
        max_keys: of(&args.max_keys),
        written: &written,
    };
    report(resiliency_rules::breaker(&options), args, given, errors);
}

/// The rules of a blocking fn's arguments: nothing can interrupt a blocking call, so neither
/// `timeout` nor `half_open_timeout` can bound it; each is refused at its name. Rules about the
/// fn, not about the options: a breaker built from code serves blocking and async calls alike
/// (`Breaker::call_blocking` runs unbounded), so the builders have no such rule and these are not
/// `resiliency_rules`'.
pub(crate) fn blocking(given: &Given, errors: &mut Errors) {
    for argument in ["timeout", "half_open_timeout"] {
        if let Some(span) = given.span(argument) {
            errors.push(
                span,
                format_args!(
                    "`{argument}` cannot bound a blocking fn: nothing can interrupt it; bound the call inside (e.g. a socket or client timeout), or make the fn `async`"
                ),
            );
        }
    }
}
