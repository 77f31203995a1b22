//! The rules of a raced function's options (`#[race_retry(...)]`, `RaceRetry::builder`).

use std::cmp::Ordering::{Greater, Less};
use std::time::Duration;

use crate::{above_zero, name_rule, Violation};

/// The most extra attempts a call may make.
pub const MAX_RETRIES: u32 = 16;
/// The smallest budget share: below it, a call's deposit would round to nothing.
pub const MIN_BUDGET_SHARE: f64 = 0.001;
/// The largest budget share: one extra attempt per call.
pub const MAX_BUDGET_SHARE: f64 = 1.0;

/// When the next attempt starts, as given.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum After {
    /// A fixed delay after the previous attempt started.
    Fixed(Duration),
    /// A quantile of recent latencies: 0.95 for `"p95"`.
    Percentile(f64),
}

/// A raced function's options as given; `None` (or `false`) where left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RaceRetryOptions<'a> {
    /// The function's name, when one is given.
    pub name: Option<&'a str>,
    /// `retries`: extra attempts on top of the first.
    pub retries: Option<u32>,
    /// `after`: when the next attempt starts.
    pub after: Option<After>,
    /// `total`: the one deadline over every attempt (required).
    pub total: Option<Duration>,
    /// `each`: the bound on one attempt.
    pub each: Option<Duration>,
    /// `budget`: the share of load extra attempts may add.
    pub budget: Option<f64>,
    /// `no_budget` (`budget = "off"`): no budget.
    pub no_budget: bool,
    /// `backoff`: the bound of the first wait after a failure.
    pub backoff: Option<Duration>,
    /// `no_backoff` (`backoff = "off"`): no wait after a failure.
    pub no_backoff: bool,
    /// `backoff_factor`: how much each wait's bound grows.
    pub backoff_factor: Option<f64>,
    /// `backoff_max`: the most one wait may be.
    pub backoff_max: Option<Duration>,
    /// Arguments written whose value could not be read (malformed, or an expression checked at
    /// first use): they count as given.
    pub written: &'a [&'a str],
}

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use std::time::Duration;
/// use resiliency_rules::{race_retry, About, RaceRetryOptions};
///
/// let options = RaceRetryOptions { retries: Some(2), ..RaceRetryOptions::default() };
/// let violations = race_retry(&options);
/// assert_eq!((violations[0].argument(), violations[0].about()), ("total", About::Presence));
/// ```
pub fn race_retry(options: &RaceRetryOptions<'_>) -> Vec<Violation> {
    let o = options;
    let given = |name: &str, is_some: bool| is_some || o.written.contains(&name);
    let mut out = Vec::new();
    name_rule(o.name, &mut out);
    if let Some(retries) = o.retries {
        let why = match retries {
            0 => Some("with none, bound the call with `tokio::time::timeout` instead"),
            n if n > MAX_RETRIES => {
                Some("each one multiplies the load an outage puts on the callee")
            }
            _ => None,
        };
        if let Some(why) = why {
            out.push(Violation::value(
                "retries",
                format!("`retries` is the number of extra attempts on top of the first, from 1 to {MAX_RETRIES}, such as `retries = 2`; {why}"),
            ));
        }
    }
    let total = o.total.filter(|t| !t.is_zero());
    if !given("total", o.total.is_some()) {
        out.push(Violation::presence(
            "total",
            "`total` is required: one deadline over every attempt, such as `#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]`",
        ));
    }
    match o.after {
        Some(After::Fixed(after)) if after.is_zero() => out.push(Violation::value(
            "after",
            "`after` must be above zero (to start every attempt at once, race them with `futures::select_ok` instead); write a duration such as \"150ms\" or a percentile such as \"p95\"",
        )),
        Some(After::Fixed(after)) => {
            if let Some(total) = total.filter(|total| after >= *total) {
                out.push(Violation::value(
                    "after",
                    format!("`after` must be below `total` ({total:?}): no attempt after the first could start before the deadline"),
                ).involving(&["total"]).ordered(Less));
            }
        }
        Some(After::Percentile(q)) if !(q > 0.0 && q < 1.0) => out.push(Violation::value(
            "after",
            format!("`after`: a percentile lies strictly between p0 and p100 (a quantile strictly between 0 and 1, got {q}), such as \"p95\""),
        )),
        _ => {}
    }
    above_zero("total", o.total, &mut out);
    above_zero("each", o.each, &mut out);
    if let (Some(each), Some(total)) = (o.each.filter(|e| !e.is_zero()), total) {
        if each >= total {
            out.push(Violation::value(
                "each",
                format!("`each` must be below `total` ({total:?}), or it bounds nothing; leave it out to let one attempt use the whole deadline"),
            ).involving(&["total"]).ordered(Less));
        }
    }
    if let Some(share) = o.budget {
        if !(MIN_BUDGET_SHARE..=MAX_BUDGET_SHARE).contains(&share) {
            out.push(Violation::value(
                "budget",
                format!("`budget` is the share of load extra attempts may add: from {MIN_BUDGET_SHARE} to {MAX_BUDGET_SHARE}, got {share}, such as `budget = 0.1` (10%, the default), or `budget = \"off\"` for no budget"),
            ));
        }
        if o.no_budget {
            out.push(Violation::presence(
                "no_budget",
                "`no_budget` turns off the `budget` also given; keep one",
            ));
        }
    }
    if o.backoff.is_some_and(|b| b.is_zero()) {
        out.push(Violation::value(
            "backoff",
            "`backoff` must be above zero; to start the next attempt at once after a failure, write `backoff = \"off\"`",
        ));
    }
    if let Some(factor) = o.backoff_factor {
        if !(factor >= 1.0 && factor.is_finite()) {
            out.push(Violation::value(
                "backoff_factor",
                format!("`backoff_factor` is how much each wait's bound grows over the one before: a number of at least 1, got {factor}, such as `backoff_factor = 2` (the default; 1 keeps every bound at `backoff`)"),
            ));
        }
    }
    above_zero("backoff_max", o.backoff_max, &mut out);
    if o.no_backoff {
        for (argument, is_some) in [
            ("backoff", o.backoff.is_some()),
            ("backoff_factor", o.backoff_factor.is_some()),
            ("backoff_max", o.backoff_max.is_some()),
        ] {
            if given(argument, is_some) {
                out.push(Violation::presence(
                    argument,
                    format!("`{argument}` does nothing with `backoff = \"off\"` (the next attempt starts at once after a failure); remove one of them"),
                ).involving(&["backoff"]));
            }
        }
    } else if let (Some(base), Some(max)) = (o.backoff.filter(|b| !b.is_zero()), o.backoff_max) {
        if max < base && !max.is_zero() {
            out.push(Violation::value(
                "backoff_max",
                format!("`backoff_max` ({max:?}) is below `backoff` ({base:?}), the bound of the first wait: raise `backoff_max`, or lower `backoff`"),
            ).involving(&["backoff"]).ordered(Greater));
        }
    }
    out
}
