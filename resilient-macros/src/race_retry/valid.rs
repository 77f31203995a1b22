//! Checks across `#[race_retry]`'s arguments, each error pointing at the argument to change:
//! `after` and `each` below `total`, `backoff_max` at least `backoff`, no `backoff_*` with
//! `backoff = "off"`.

use proc_macro2::Span;

use super::ast::{After, Backoff, RaceRetry};
use crate::driver::{Errors, Given};
use crate::value::Spanned;

/// Every check across `#[race_retry]`'s arguments: `total` is required, `after` and `each` lie
/// below it, and the backoff's (see [`validate_backoff`]).
pub(crate) fn validate(args: &RaceRetry, given: &Given, errors: &mut Errors) {
    // A malformed `total` has its own error; "needs `total`" would only repeat it.
    let total_given = given.span("total").is_some();
    let Some(total) = &args.total else {
        if total_given {
            return;
        }
        errors.push(
            Span::call_site(),
            "`#[race_retry]` needs `total`: one deadline over every attempt, such as `#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]`",
        );
        return;
    };
    if let Some(Spanned {
        value: After::Fixed(after),
        span,
        ..
    }) = &args.after
    {
        if after >= &total.value {
            errors.push(
                *span,
                format_args!(
                    "`after` must be below `total` ({}): no attempt after the first could start before the deadline",
                    format_args!("{:?}", total.value)
                ),
            );
        }
    }
    validate_backoff(args, errors);
    if let Some(each) = &args.each {
        if each.value >= total.value {
            errors.push(
                each.span,
                format_args!(
                    "`each` must be below `total` ({}), or it bounds nothing; leave it out to let one attempt use the whole deadline",
                    format_args!("{:?}", total.value)
                ),
            );
        }
    }
}

/// `backoff_factor` and `backoff_max` need a backoff; `backoff_max` bounds no wait below
/// `backoff`.
fn validate_backoff(args: &RaceRetry, errors: &mut Errors) {
    let base = match args.backoff.as_ref().map(|b| b.value) {
        Some(Backoff::Off) => {
            let given = [
                (
                    "backoff_factor",
                    args.backoff_factor.as_ref().map(|f| f.name),
                ),
                ("backoff_max", args.backoff_max.as_ref().map(|m| m.name)),
            ];
            for (name, span) in given {
                if let Some(span) = span {
                    errors.push(
                    span,
                    format_args!(
                        "`{name}` does nothing with `backoff = \"off\"` (the next attempt starts at once after a failure); remove one of them"
                    ),
                );
                }
            }
            return;
        }
        Some(Backoff::Base(base)) => base,
        None => return,
    };
    if let Some(max) = &args.backoff_max {
        if max.value < base {
            errors.push(
            max.span,
            format_args!(
                "`backoff_max` ({:?}) is below `backoff` ({base:?}), the bound of the first wait: raise `backoff_max`, or lower `backoff`",
                max.value
            ),
        );
        }
    }
}
