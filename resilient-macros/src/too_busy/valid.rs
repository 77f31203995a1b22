//! The rules of `#[too_busy]`'s arguments: `resilient_rules::too_busy`, the same that
//! `TooBusy::builder` checks, each error pointing at the argument to change.

use resilient_rules::TooBusyOptions;

use super::ast::TooBusy;
use crate::driver::{report, Errors, Given};

/// Every rule `#[too_busy]`'s arguments break.
pub(crate) fn validate(args: &TooBusy, given: &Given, errors: &mut Errors) {
    let options = TooBusyOptions {
        name: None,
        max_lag: args.max_lag.as_ref().map(|arg| arg.value),
        max_in_flight: args.max_in_flight.as_ref().map(|arg| arg.value),
        max_latency: args.max_latency.as_ref().map(|arg| arg.value),
    };
    report(resilient_rules::too_busy(&options), args, given, errors);
}
