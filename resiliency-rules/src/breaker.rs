//! The rules of a circuit breaker's options (`#[breaker(...)]`, `Breaker::builder`).

use std::time::Duration;

use crate::{above_zero, name_rule, Violation};

/// The most `error_threshold`, `success_threshold` and `half_open_calls` may be.
pub const MAX_COUNT: u32 = u16::MAX as u32;

/// How many times `error_timeout` a breaker may stay open when `max_error_timeout` is left out:
/// a macro, so that the table's words and [`BreakerOptions::max_error_timeout_for`] read one
/// number.
#[macro_export]
#[doc(hidden)]
macro_rules! max_error_timeout_times {
    () => {
        10
    };
}

/// `#[breaker]`'s settings: the table that the attribute's arguments, the builder's methods, the
/// settings by name and the docs come from (see the crate's `table` module).
#[macro_export]
#[doc(hidden)]
macro_rules! breaker_settings {
    ($($then:ident)::+ ! { $($before:tt)* }) => {
        $($then)::+! { $($before)*
            /// Count rule (the default, as in Semian): opens when this many errors fall within `error_window`.
            /// Successes in between do not reset the count. At most 65535 (the breaker keeps the
            /// time of each of the last `error_threshold` errors, 8 bytes each, from its first
            /// error on; for many calls, the rate rule's `failure_rate` counts in fixed memory).
            error_threshold: u32 as Count, e.g. 5, default = 3;
            /// The window errors (or calls) are counted in.
            /// When left out: `error_timeout`, but at least `error_threshold` (or `min_calls`)
            /// times `timeout`, so that a worker whose calls all time out can still meet the rule.
            error_window: ::core::time::Duration as Duration, e.g. "10s", default derived "`error_timeout`, at least `error_threshold` (or `min_calls`) × `timeout`";
            /// How long it stays open, from the last error.
            error_timeout: ::core::time::Duration as Duration, e.g. "30s", default = "10s";
            /// Instead of `error_timeout`: `error_timeout = timeout * c / (1 - c)`; needs `timeout` (so `async fn` only).
            /// The share of time a worker stays free while it keeps probing an endpoint that only
            /// times out; it lies in (0, 1).
            capacity: f64 as Number, e.g. 0.75, default none "none";
            /// Bounds every call, from its first wait; an expired call counts as an error and returns a timeout `Rejected`; `async fn` only.
            timeout: ::core::time::Duration as Timeout, e.g. "60s", default none "none";
            /// A shorter bound for probes while half-open; `async fn` only.
            /// Semian's `half_open_resource_timeout`.
            half_open_timeout: ::core::time::Duration as Timeout, e.g. "1s", default derived "`timeout`";
            /// A call slower than this counts as a failure toward opening it; it is not cancelled, and its result is returned.
            /// Measured from the call's first wait (`async fn`) or its start (blocking fn), as
            /// `timeout` is; below `timeout`, which ends a call first.
            slow_call_duration: ::core::time::Duration as Timeout, e.g. "2s", default none "none";
            /// Successful probes that close it, at most 65535.
            success_threshold: u32 as Count, e.g. 2, default = 1;
            /// Probes allowed at once while half-open, at most 65535; further calls are refused.
            half_open_calls: u32 as Count, e.g. 2, default = 1;
            /// Rate rule instead: opens on an error when `errors / calls >= rate` ...
            /// ... and at least `min_calls` calls completed within `error_window`. It lies in (0, 1].
            failure_rate: f64 as Number, e.g. 0.5, default none "none";
            /// ... and at least this many calls completed within `error_window`.
            min_calls: u32 as Count, e.g. 50, default = 20;
            /// Rate rule: also opens when `slow calls / calls >= slow_call_rate` (with `min_calls`); a slow success then counts as a success, not an error.
            /// Needs `failure_rate` and `slow_call_duration`; lies in (0, 1]. resilience4j's
            /// `slowCallRateThreshold`.
            slow_call_rate: f64 as Number, e.g. 0.8, default none "none: a slow call is a failure";
            /// Each failed probe multiplies the open time by this.
            /// The n-th consecutive re-open stays open for `error_timeout * backoff^n`, capped at
            /// `max_error_timeout`. At least 1; 1 keeps every open time at `error_timeout`.
            backoff: f64 as Factor, e.g. 2.0, default = 1.0;
            /// The longest a breaker stays open: caps the open time grown by `backoff`, and how
            /// long an upstream's `Retry-After` hint holds an opening breaker open.
            max_error_timeout: ::core::time::Duration as Duration, e.g. "5m", default derived concat!($crate::max_error_timeout_times!(), " × `error_timeout`");
            /// Keyed: a key unused this long may be evicted if closed with no errors, or open past its open time.
            idle_timeout: ::core::time::Duration as Duration, e.g. "30m", default = "10m";
            /// Keyed: the most keys held at once (about 0.3 to 2.5 KB each).
            /// When full, a new key evicts the longest-unused keys among those holding nothing
            /// worth keeping (see `idle_timeout`), however recently used; if there are none, it
            /// gets a fresh breaker that is not remembered.
            ///
            /// Each key costs memory once its breaker has seen an error: about 300 bytes plus 8
            /// per unit of `error_threshold` under the count rule, and about 300 bytes plus 128
            /// per stripe of the rate window under the rate rule (one stripe per CPU, from 4 to
            /// 16). The default therefore bounds a family at about 5 MB under the count rule and
            /// 13 to 40 MB under the rate rule.
            max_keys: usize as Keys, e.g. 100000, default = 16_384;
        }
    };
}

breaker_settings!(crate::table::options! {
    /// A breaker's options as given; `None` where left out.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct BreakerOptions<'a> {
        /// The breaker's name, when one is given.
        pub name: Option<&'a str>,
        /// Whether the breaker is keyed (`key = ...`, or a keyed build).
        pub key: bool,
        /// Arguments written whose value could not be read (malformed, or an expression checked
        /// at first use): they count as given.
        pub written: &'a [&'a str],
    }
});

impl BreakerOptions<'_> {
    /// `max_error_timeout` in force for a breaker whose `error_timeout` in force is
    /// `error_timeout`: as given, or else its default (derived from `error_timeout`); never
    /// below `error_timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency_rules::BreakerOptions;
    ///
    /// let given = BreakerOptions { max_error_timeout: Some(Duration::from_secs(60)), ..Default::default() };
    /// assert_eq!(given.max_error_timeout_for(Duration::from_secs(10)), Duration::from_secs(60));
    /// assert_eq!(given.max_error_timeout_for(Duration::from_secs(90)), Duration::from_secs(90));
    /// ```
    pub fn max_error_timeout_for(&self, error_timeout: Duration) -> Duration {
        self.max_error_timeout
            .unwrap_or_else(|| error_timeout.saturating_mul(crate::max_error_timeout_times!()))
            .max(error_timeout)
    }
}

/// Pairs of settings that exclude each other, and why: setting both breaks a rule, and a
/// run-time override of one drops the attribute's other.
pub const BREAKER_EXCLUSIVE: &[(&str, &str, &str)] = &[
    (
        "error_timeout",
        "capacity",
        "`error_timeout` and `capacity` both set how long the breaker stays open; keep one",
    ),
    (
        "error_threshold",
        "failure_rate",
        "`error_threshold` (count rule) and `failure_rate` (rate rule) exclude each other; keep one",
    ),
];

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
            out.push(exclusive(&BREAKER_EXCLUSIVE[0]));
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
    above_zero("slow_call_duration", o.slow_call_duration, &mut out);
    if let (Some(s), Some(t)) = (o.slow_call_duration, o.timeout) {
        if s >= t && !s.is_zero() {
            out.push(
                Violation::value(
                    "slow_call_duration",
                    format!("`slow_call_duration` ({s:?}) must be shorter than `timeout` ({t:?}), which ends a call first"),
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
            out.push(exclusive(&BREAKER_EXCLUSIVE[1]));
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
    if let Some(rate) = o.slow_call_rate {
        if !(rate > 0.0 && rate <= 1.0) {
            out.push(Violation::value(
                "slow_call_rate",
                format!("`slow_call_rate` must lie in (0, 1], got {rate}: the share of slow calls that opens the breaker, e.g. `slow_call_rate = 0.8`"),
            ));
        }
    }
    if given("slow_call_rate", o.slow_call_rate.is_some()) {
        if !given("failure_rate", o.failure_rate.is_some()) {
            out.push(
                Violation::presence(
                    "slow_call_rate",
                    "`slow_call_rate` belongs to the rate rule; add `failure_rate = ...` (under the count rule, a slow call counts as an error), or remove it",
                )
                .involving(&["failure_rate"]),
            );
        }
        if !given("slow_call_duration", o.slow_call_duration.is_some()) {
            out.push(
                Violation::presence(
                    "slow_call_rate",
                    "`slow_call_rate` needs `slow_call_duration`, the time past which a call is slow; add `slow_call_duration = \"1s\"`",
                )
                .involving(&["slow_call_duration"]),
            );
        }
    }
    count("half_open_calls", o.half_open_calls, "", &mut out);
    if let Some(b) = o.backoff {
        if !(b >= 1.0 && b.is_finite()) {
            out.push(Violation::value(
                "backoff",
                format!("`backoff` must be a factor of at least 1, got {b}, e.g. `backoff = 2.0`"),
            ));
        }
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

/// The violation of a pair of [`BREAKER_EXCLUSIVE`] settings both given, at the first.
fn exclusive(pair: &'static (&'static str, &'static str, &'static str)) -> Violation {
    Violation::presence(pair.0, pair.2).involving(std::slice::from_ref(&pair.1))
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
