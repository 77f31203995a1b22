//! Checks across arguments, each error pointing at the argument to change.

use super::ast::Breaker;
use crate::driver::{Errors, Given};

/// Every check across `#[breaker]`'s arguments.
pub(crate) fn validate(args: &Breaker, given: &Given, errors: &mut Errors) {
    if let Some(c) = &args.capacity {
        if !(c.value > 0.0 && c.value < 1.0) {
            errors.push(
                c.span,
                format_args!(
                    "`capacity` must lie between 0 and 1 (exclusive), got {}: it is the share of time a worker stays free, e.g. `capacity = 0.75`",
                    c.value
                ),
            );
        }
        if let Some(e) = given.span("error_timeout") {
            errors.push(
                e,
                "`error_timeout` and `capacity` both set how long the breaker stays open; keep one",
            );
        } else if given.span("timeout").is_none() {
            errors.push(
                c.name,
                "`capacity` needs `timeout`: error_timeout = timeout * capacity / (1 - capacity); add e.g. `timeout = \"2s\"`",
            );
        }
    }
    if let Some(rate) = &args.failure_rate {
        if !(rate.value > 0.0 && rate.value <= 1.0) {
            errors.push(
                rate.span,
                format_args!(
                    "`failure_rate` must lie in (0, 1], got {}: the share of failed calls that opens the breaker, e.g. `failure_rate = 0.5`",
                    rate.value
                ),
            );
        }
        if let Some(t) = given.span("error_threshold") {
            errors.push(
                t,
                "`error_threshold` (count rule) and `failure_rate` (rate rule) exclude each other; keep one",
            );
        }
    } else if let (Some(m), None) = (given.span("min_calls"), given.span("failure_rate")) {
        errors.push(
            m,
            "`min_calls` belongs to the rate rule; add `failure_rate = ...` or remove it",
        );
    }
    if let (Some(h), Some(t)) = (&args.half_open_timeout, &args.timeout) {
        if h.value >= t.value {
            errors.push(
                h.span,
                format_args!(
                    "`half_open_timeout` ({:?}) must be shorter than `timeout` ({:?})",
                    h.value, t.value
                ),
            );
        }
    }
    if let Some(b) = &args.backoff {
        if !(b.value >= 1.0 && b.value.is_finite()) {
            errors.push(
                b.span,
                format_args!(
                    "`backoff` must be a factor of at least 1, got {}, e.g. `backoff = 2.0`",
                    b.value
                ),
            );
        }
    } else if let Some(m) = &args.max_error_timeout {
        errors.push(
            m.name,
            "`max_error_timeout` caps `backoff`; add `backoff = 2.0` or remove it",
        );
    }
    if given.span("key").is_none() {
        for (name, span) in [
            ("idle_timeout", given.span("idle_timeout")),
            ("max_keys", given.span("max_keys")),
        ] {
            if let Some(span) = span {
                errors.push(
                    span,
                    format_args!(
                        "`{name}` applies to keyed breakers; add `key = ...` or remove it"
                    ),
                );
            }
        }
    }
    for (name, arg, memory) in [
        (
            "error_threshold",
            &args.error_threshold,
            " (the breaker keeps the time of each of the last `error_threshold` errors); for many calls, use the rate rule: `failure_rate = 0.5`",
        ),
        ("success_threshold", &args.success_threshold, ""),
        ("half_open_calls", &args.half_open_calls, ""),
    ] {
        if let Some(arg) = arg.as_ref().filter(|arg| arg.value > u32::from(u16::MAX)) {
            errors.push(
                arg.span,
                format_args!("`{name}` must be at most 65535, got {}{memory}", arg.value),
            );
        }
    }
    if let Some(name) = &args.name {
        if name.value.value().is_empty() {
            errors.push(name.span, "`name` must not be empty");
        }
    }
}
