//! The rules of a circuit breaker's options (`#[breaker(...)]`, `Breaker::builder`).

use std::time::Duration;

use crate::{above_zero, name_rule, Violation};

/// The most `error_threshold`, `success_threshold` and `half_open_calls` may be.
pub const MAX_COUNT: u32 = u16::MAX as u32;

/// A breaker's options as given; `None` where left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BreakerOptions<'a> {
    /// The breaker's name, when one is given.
    pub name: Option<&'a str>,
    /// Whether the breaker is keyed (`key = ...`, or a keyed build).
    pub key: bool,
    /// `error_threshold`: errors within the window that open the breaker (count rule).
    pub error_threshold: Option<u32>,
    /// `error_window`: the window the rule looks back over.
    pub error_window: Option<Duration>,
    /// `error_timeout`: how long the breaker stays open.
    pub error_timeout: Option<Duration>,
    /// `success_threshold`: successful probes that close the breaker.
    pub success_threshold: Option<u32>,
    /// `capacity`: the share of time a worker stays free, in (0, 1).
    pub capacity: Option<f64>,
    /// `timeout`: the bound on every call.
    pub timeout: Option<Duration>,
    /// `half_open_timeout`: the bound on a probe call.
    pub half_open_timeout: Option<Duration>,
    /// `failure_rate`: the rate rule's share of failed calls, in (0, 1].
    pub failure_rate: Option<f64>,
    /// `min_calls`: the rate rule's minimum number of calls.
    pub min_calls: Option<u32>,
    /// `half_open_calls`: probe calls at once while half-open.
    pub half_open_calls: Option<u32>,
    /// `backoff`: the growth of the open time after each failed probe.
    pub backoff: Option<f64>,
    /// `max_error_timeout`: the cap on the open time grown by `backoff`.
    pub max_error_timeout: Option<Duration>,
    /// `idle_timeout`: keyed only, how long an unused key is kept.
    pub idle_timeout: Option<Duration>,
    /// `max_keys`: keyed only, the most keys held at once.
    pub max_keys: Option<u64>,
    /// Arguments written whose value could not be read (malformed, or an expression checked at
    /// first use): they count as given.
    pub written: &'a [&'a str],
}

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use std::time::Duration;
/// use resiliency_rules::{breaker, BreakerOptions};
///
/// let options = BreakerOptions { capacity: Some(0.75), ..BreakerOptions::default() };
/// let violations = breaker(&options);
/// assert_eq!(violations[0].argument(), "capacity");
/// assert!(violations[0].message().starts_with("`capacity` needs `timeout`"));
///
/// let options = BreakerOptions {
///     capacity: Some(0.75),
///     timeout: Some(Duration::from_secs(2)),
///     ..BreakerOptions::default()
/// };
/// assert!(breaker(&options).is_empty());
/// ```
pub fn breaker(options: &BreakerOptions<'_>) -> Vec<Violation> {
    let o = options;
    let given = |name: &str, is_some: bool| is_some || o.written.contains(&name);
    let mut out = Vec::new();
    name_rule(o.name, &mut out);
    count(
        "error_threshold",
        o.error_threshold,
        " (the breaker keeps the time of each of the last `error_threshold` errors); for many calls, use the rate rule: `failure_rate = 0.5`",
        &mut out,
    );
    above_zero("error_window", o.error_window, &mut out);
    above_zero("error_timeout", o.error_timeout, &mut out);
    count("success_threshold", o.success_threshold, "", &mut out);
    if let Some(c) = o.capacity {
        if !(c > 0.0 && c < 1.0) {
            out.push(Violation::value(
                "capacity",
                format!("`capacity` must lie between 0 and 1 (exclusive), got {c}: it is the share of time a worker stays free, e.g. `capacity = 0.75`"),
            ));
        }
    }
    if given("capacity", o.capacity.is_some()) {
        if given("error_timeout", o.error_timeout.is_some()) {
            out.push(Violation::presence(
                "error_timeout",
                "`error_timeout` and `capacity` both set how long the breaker stays open; keep one",
            ).involving(&["capacity"]));
        } else if !given("timeout", o.timeout.is_some()) {
            out.push(Violation::presence(
                "capacity",
                "`capacity` needs `timeout`: error_timeout = timeout * capacity / (1 - capacity); add e.g. `timeout = \"2s\"`",
            ).involving(&["timeout"]));
        }
    }
    above_zero("timeout", o.timeout, &mut out);
    above_zero("half_open_timeout", o.half_open_timeout, &mut out);
    if let (Some(h), Some(t)) = (o.half_open_timeout, o.timeout) {
        if h >= t && !h.is_zero() {
            out.push(
                Violation::value(
                    "half_open_timeout",
                    format!("`half_open_timeout` ({h:?}) must be shorter than `timeout` ({t:?})"),
                )
                .involving(&["timeout"])
                .ordered(std::cmp::Ordering::Less),
            );
        }
    }
    if let Some(rate) = o.failure_rate {
        if !(rate > 0.0 && rate <= 1.0) {
            out.push(Violation::value(
                "failure_rate",
                format!("`failure_rate` must lie in (0, 1], got {rate}: the share of failed calls that opens the breaker, e.g. `failure_rate = 0.5`"),
            ));
        }
    }
    if given("failure_rate", o.failure_rate.is_some()) {
        if given("error_threshold", o.error_threshold.is_some()) {
            out.push(Violation::presence(
                "error_threshold",
                "`error_threshold` (count rule) and `failure_rate` (rate rule) exclude each other; keep one",
            ).involving(&["failure_rate"]));
        }
    } else if given("min_calls", o.min_calls.is_some()) {
        out.push(
            Violation::presence(
                "min_calls",
                "`min_calls` belongs to the rate rule; add `failure_rate = ...` or remove it",
            )
            .involving(&["failure_rate"]),
        );
    }
    if o.min_calls == Some(0) {
        out.push(at_least_one("min_calls"));
    }
    count("half_open_calls", o.half_open_calls, "", &mut out);
    if let Some(b) = o.backoff {
        if !(b >= 1.0 && b.is_finite()) {
            out.push(Violation::value(
                "backoff",
                format!("`backoff` must be a factor of at least 1, got {b}, e.g. `backoff = 2.0`"),
            ));
        }
    } else if given("max_error_timeout", o.max_error_timeout.is_some())
        && !o.written.contains(&"backoff")
    {
        out.push(
            Violation::presence(
                "max_error_timeout",
                "`max_error_timeout` caps `backoff`; add `backoff = 2.0` or remove it",
            )
            .involving(&["backoff"]),
        );
    }
    above_zero("max_error_timeout", o.max_error_timeout, &mut out);
    above_zero("idle_timeout", o.idle_timeout, &mut out);
    if o.max_keys == Some(0) {
        out.push(at_least_one("max_keys"));
    }
    if !o.key {
        for (argument, is_some) in [
            ("idle_timeout", o.idle_timeout.is_some()),
            ("max_keys", o.max_keys.is_some()),
        ] {
            if given(argument, is_some) {
                out.push(Violation::presence(
                    argument,
                    format!("`{argument}` applies to keyed breakers; add `key = ...` or remove it"),
                ));
            }
        }
    }
    out
}

fn at_least_one(argument: &'static str) -> Violation {
    Violation::value(
        argument,
        format!("`{argument}` must be at least 1, e.g. `{argument} = 3`"),
    )
}

/// A count from 1 to [`MAX_COUNT`]; `memory` says why the bound, if there is more to say.
fn count(argument: &'static str, value: Option<u32>, memory: &str, out: &mut Vec<Violation>) {
    match value {
        Some(0) => out.push(at_least_one(argument)),
        Some(n) if n > MAX_COUNT => out.push(Violation::value(
            argument,
            format!("`{argument}` must be at most {MAX_COUNT}, got {n}{memory}"),
        )),
        _ => {}
    }
}
