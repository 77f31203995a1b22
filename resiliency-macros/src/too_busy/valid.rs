//! The rules of `#[too_busy]`'s arguments: `resiliency_rules::too_busy`, the same that
//! `TooBusy::builder` checks, each error pointing at the argument to change.

use resiliency_rules::TooBusyOptions;

use super::ast::{InFlight, TooBusy};
use crate::driver::{report, Errors, Given};
use crate::value::of;

/// The arguments that bound a learned limit.
const BOUNDS: [&str; 3] = ["auto_min", "auto_max", "auto_initial"];

/// Every rule `#[too_busy]`'s arguments break.
pub(crate) fn validate(args: &TooBusy, given: &Given, errors: &mut Errors) {
    let auto = matches!(of(&args.max_in_flight), Some(InFlight::Auto));
    let name = args.name.as_ref().map(|name| name.value.value());
    let mut options = TooBusyOptions {
        name: name.as_deref(),
        ..TooBusyOptions::default()
    };
    args.fill(&mut options);
    report(resiliency_rules::too_busy(&options), args, given, errors);
    // A rule about the attribute's text, not about the options: a builder or a setting for every
    // site may hold bounds that apply only where the limit is learned, but written here without
    // `"auto"` they would do nothing.
    if !auto {
        for bound in BOUNDS {
            if let Some(span) = given.span(bound) {
                errors.push(
                    span,
                    format!("`{bound}` bounds the limit `max_in_flight = \"auto\"` learns; add `max_in_flight = \"auto\"`, or remove `{bound}`"),
                );
            }
        }
    }
}

/// The rules of a blocking fn's arguments: the runtime's lag can only be measured by an async
/// runtime, so `max_lag` is refused at its name and `max_in_flight` or `max_latency` is required
/// (at the attribute); the refusal goes through `Result<T, E>` (at the return type). Rules about
/// the fn, not about the options: a guard built from code serves blocking and async calls alike
/// (`TooBusy::call_blocking` ignores the lag), so the builders have no such rule and these are not
/// `resiliency_rules`'.
pub(crate) fn blocking(func: &syn::ItemFn, given: &Given, errors: &mut Errors) {
    if let Some(span) = given.span("max_lag") {
        errors.push(
            span,
            "`max_lag` does not apply to a blocking fn: the runtime's lag can only be measured by an async runtime; remove it and keep `max_in_flight` or `max_latency`, or make the fn `async`",
        );
    }
    if given.span("max_in_flight").is_none() && given.span("max_latency").is_none() {
        errors.push(
            proc_macro2::Span::call_site(),
            "`#[too_busy]` on a blocking fn needs `max_in_flight` or `max_latency`: the runtime's lag can only be measured by an async runtime; add `max_in_flight = N`, or make the fn `async`",
        );
    }
    if let Some(ty) = crate::func::return_type(func) {
        // A type that cannot be a `Result` at all is refused by `func::parse` already.
        let refusable = matches!(ty, syn::Type::ImplTrait(_)) || crate::func::could_be_result(ty);
        if refusable && !crate::func::is_result(ty) {
            errors.add(syn::Error::new_spanned(
                ty,
                "`#[too_busy]` on a blocking fn refuses a call through `Result<T, E>` with `E: From<resiliency::Rejected>`; return that, or make the fn `async`",
            ));
        }
    }
}
