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

/// When the next attempt starts while none has succeeded (it also starts, after a backoff, when
/// one fails).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum After {
    /// This long after the previous attempt started.
    Fixed(Duration),
    /// That quantile (in (0, 1): 0.95 for `"p95"`) of the function's recent attempt latencies,
    /// learned as it runs. Until 32 attempts were seen, `total / (retries + 1)`.
    Percentile(f64),
}

/// A retry budget: a share of the calls' load that extra attempts may add, or none.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Budget {
    /// Extra attempts may add at most this share of the calls' load.
    Share(f64),
    /// No budget (`budget = "off"`).
    Off,
}

impl From<f64> for Budget {
    fn from(share: f64) -> Self {
        Budget::Share(share)
    }
}

/// The wait before an attempt that replaces a failed one: exponential backoff from a bound, or
/// none.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Backoff {
    /// The bound of the first wait.
    Base(Duration),
    /// No wait (`backoff = "off"`): the replacement starts at once.
    Off,
}

impl From<Duration> for Backoff {
    fn from(base: Duration) -> Self {
        Backoff::Base(base)
    }
}

impl From<Duration> for After {
    fn from(after: Duration) -> Self {
        After::Fixed(after)
    }
}

/// `#[race_retry]`'s settings: the table that the attribute's arguments, the builder's methods,
/// the settings by name and the docs come from (see the crate's `table` module).
#[macro_export]
#[doc(hidden)]
macro_rules! race_retry_settings {
    ($($then:ident)::+ ! { $($before:tt)* }) => {
        $($then)::+! { $($before)*
            /// Extra attempts at most, on top of the first: from 1 to 16.
            retries: u32 as Count, e.g. 3, default = 2;
            /// The most attempts of one call running at once: an attempt that is due waits until fewer run; `1` makes the race a plain retry, each attempt started once the one before it failed.
            /// At least 1; from `retries + 1` on, it caps nothing. An attempt that waited for a
            /// slot starts no sooner than `after`, a failure's backoff or a Retry-After hint would
            /// have started it, and not at or past `total`. The slots are the call's own: one
            /// call never waits for another's attempts. Lowered by name while a call runs, it
            /// holds for that call at once (no attempt starts until fewer run).
            max_attempts_in_flight: u32 as Count, e.g. 1, default none "every attempt at once";
            /// When the next attempt starts while none has succeeded: a delay after the previous one started, or `"p95"` (any `"pNN"` or `"pNN.N"`), that percentile of this fn's recent attempt latencies, learned as it runs (`total / (retries + 1)` until 32 attempts were seen).
            /// A fixed delay must lie below `total`; a percentile is a quantile strictly between
            /// 0 and 1.
            after: $crate::After as After, e.g. "150ms", default = "p95";
            /// One deadline over everything: then the call returns `Err(E::from(Rejected))` (`Rejected::is_deadline`) and every attempt is cancelled.
            /// Above zero. Required.
            total: ::core::time::Duration as Duration, e.g. "450ms", default none "required";
            /// Bound on one attempt: an attempt past it is cancelled and has failed.
            /// Above zero and below `total`.
            each: ::core::time::Duration as Timeout, e.g. "300ms", default none "none";
            /// Extra attempts may add at most this share of the calls of this fn (plus 10 per second, so that a rarely called fn can still race; at most 100 banked), shared by all its calls; `"off"`: no budget.
            /// Each call deposits the share of a token, each extra attempt takes a whole one, and
            /// while deposits come slower than 10 tokens a second the floor makes up the
            /// difference. From 0.001 to 1. Without a budget every extra attempt that `retries`,
            /// `after` and failures call for starts, however many calls fail (an outage then meets
            /// `retries + 1` times its load).
            budget: $crate::Budget as Budget, e.g. 0.2, default = 0.1;
            /// An attempt that replaces a failed one (an error worth another, or past `each`) waits a random time below this, then below twice it, and so on (exponential backoff with full jitter), but starts no later than `after` would have started it, and not at all at or past `total`; `"off"`: at once.
            /// The call's n-th such wait (n from 0) is uniform in `[0, min(max, base * factor^n))`;
            /// `base` must be above zero. A call with no attempt left running at the deadline
            /// returns the last error at once.
            ///
            /// Why the default (a quarter of `min(after, total)`, of the `after` learned so far
            /// with a percentile): the wait scales with the call, as a fixed one cannot (perron's
            /// retries, node-retry's defaults, wait 1 s and then 2 s: longer than a 450 ms
            /// deadline). `after` is how long an attempt is expected to take; a quarter of it,
            /// doubling, means that with two retries a call whose attempts all fail
            /// fast waits at most three quarters of `after` in all: a transient error is retried
            /// well before the staggered start would have, while the retries of many failing
            /// calls are spread over that window instead of arriving together.
            backoff: $crate::Backoff as Backoff, e.g. "10ms", default derived "a quarter of `after` (of `total` if `after` is not below it)";
            /// How much each wait's bound grows over the one before; at least 1.
            backoff_factor: f64 as Factor, e.g. 1.5, default = 2.0;
            /// The most one wait may be.
            /// At least `backoff`. `Duration::MAX` works (a wait that long never ends before the
            /// deadline).
            backoff_max: ::core::time::Duration as Duration, e.g. "100ms", default none "none (the next staggered start bounds it)";
        }
    };
}

race_retry_settings!(crate::table::options! {
    /// A raced function's options as given; `None` where left out.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct RaceRetryOptions<'a> {
        /// The function's name, when one is given.
        pub name: Option<&'a str>,
        /// Arguments written whose value could not be read (malformed, or an expression checked
        /// at first use): they count as given.
        pub written: &'a [&'a str],
    }
});

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
    if o.max_attempts_in_flight == Some(0) {
        out.push(Violation::value(
            "max_attempts_in_flight",
            "`max_attempts_in_flight` must be at least 1: `max_attempts_in_flight = 1` runs one attempt at a time (a plain retry); leave it out to let every attempt run at once",
        ));
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
    if let Some(Budget::Share(share)) = o.budget {
        if !(MIN_BUDGET_SHARE..=MAX_BUDGET_SHARE).contains(&share) {
            let example = match RaceRetryOptions::default().budget() {
                Budget::Share(default) => format!("such as `budget = {default}` (the default), "),
                Budget::Off => String::new(),
            };
            out.push(Violation::value(
                "budget",
                format!("`budget` is the share of load extra attempts may add: from {MIN_BUDGET_SHARE} to {MAX_BUDGET_SHARE}, got {share}, {example}or `budget = \"off\"` for no budget"),
            ));
        }
    }
    let base = match o.backoff {
        Some(Backoff::Base(base)) => Some(base),
        _ => None,
    };
    if base.is_some_and(|b| b.is_zero()) {
        out.push(Violation::value(
            "backoff",
            "`backoff` must be above zero; to start the next attempt at once after a failure, write `backoff = \"off\"`",
        ));
    }
    if let Some(factor) = o.backoff_factor {
        if !(factor >= 1.0 && factor.is_finite()) {
            out.push(Violation::value(
                "backoff_factor",
                format!("`backoff_factor` is how much each wait's bound grows over the one before: a number of at least 1, got {factor}, such as `backoff_factor = {}` (the default; 1 keeps every bound at `backoff`)", RaceRetryOptions::default().backoff_factor()),
            ));
        }
    }
    above_zero("backoff_max", o.backoff_max, &mut out);
    if o.backoff == Some(Backoff::Off) {
        for (argument, is_some) in [
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
    } else if let (Some(base), Some(max)) = (base.filter(|b| !b.is_zero()), o.backoff_max) {
        if max < base && !max.is_zero() {
            out.push(Violation::value(
                "backoff_max",
                format!("`backoff_max` ({max:?}) is below `backoff` ({base:?}), the bound of the first wait: raise `backoff_max`, or lower `backoff`"),
            ).involving(&["backoff"]).ordered(Greater));
        }
    }
    out
}
