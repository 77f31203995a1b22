//! The rules of `#[too_busy]`'s arguments: `resilient_rules::too_busy`, the same that
//! `TooBusy::builder` checks, each error pointing at the argument to change.

use resilient_rules::TooBusyOptions;

use super::ast::TooBusy;
use crate::driver::{report, Errors, Given};
use crate::value::of;

/// Every rule `#[too_busy]`'s arguments break.
pub(crate) fn validate(args: &TooBusy, given: &Given, errors: &mut Errors) {
    let options = TooBusyOptions {
        name: None,
        max_lag: of(&args.max_lag),
        max_in_flight: of(&args.max_in_flight),
        max_latency: of(&args.max_latency),
    };
    report(resilient_rules::too_busy(&options), args, given, errors);
}
