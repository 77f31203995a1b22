//! The rules of `#[breaker]`'s arguments: `resiliency_rules::breaker`, the same that
//! `Breaker::builder` checks, each error pointing at the argument to change.

use resiliency_rules::BreakerOptions;

use super::ast::Breaker;
use crate::driver::{report, Errors, Given};

/// Every rule `#[breaker]`'s arguments break.
pub(crate) fn validate(args: &Breaker, given: &Given, errors: &mut Errors) {
    let name = args.name.as_ref().map(|name| name.value.value());
    let written = given.written(args);
    let mut options = BreakerOptions {
        name: name.as_deref(),
        key: given.span("key").is_some(),
        written: &written,
        ..BreakerOptions::default()
    };
    args.fill(&mut options);
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
