//! The rules of a rate limit's options (`#[rate_limit(...)]`, `RateLimit::builder`), and its
//! rate: "100/s".

use std::fmt;
use std::time::Duration;

use crate::{above_zero, name_rule, parse_duration, Violation};

/// A rate: at most `count` calls per `per`, such as `"100/s"` (100 per second), `"5/m"` or
/// `"10/100ms"`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    /// Calls per period: at least 1.
    pub count: u32,
    /// The period: above zero.
    pub per: Duration,
}

impl Rate {
    /// `count` calls per `per`.
    pub const fn new(count: u32, per: Duration) -> Self {
        Rate { count, per }
    }

    /// `count` calls per second.
    pub const fn per_second(count: u32) -> Self {
        Rate::new(count, Duration::from_secs(1))
    }

    /// `count` calls per minute.
    pub const fn per_minute(count: u32) -> Self {
        Rate::new(count, Duration::from_secs(60))
    }

    /// The time between two calls at this pace (GCRA's emission interval), in ns: at least 1.
    pub fn interval_ns(&self) -> u64 {
        let per = u64::try_from(self.per.as_nanos()).unwrap_or(u64::MAX);
        (per / u64::from(self.count.max(1))).max(1)
    }
}

impl fmt::Display for Rate {
    /// In the attribute's syntax, the period in the largest unit that writes it whole: `100/s`,
    /// `5/m`, `1/h`, `10/100ms`, `3/90s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.per.as_nanos();
        let (unit, length) = crate::duration::UNITS
            .iter()
            .filter(|(unit, _)| *unit != "µs")
            .map(|&(unit, length)| (unit, u128::from(length)))
            .find(|(_, length)| nanos.is_multiple_of(*length))
            .unwrap_or(("ns", 1));
        match nanos / length {
            1 => write!(f, "{}/{unit}", self.count),
            n => write!(f, "{}/{n}{unit}", self.count),
        }
    }
}

/// Parses a rate: a whole number of calls, `/`, and a period written as a duration, whose number
/// may be left out for one unit: `"100/s"`, `"100/1s"`, `"5/m"`, `"1000/h"`, `"10/100ms"`.
///
/// ```
/// use std::time::Duration;
/// use resiliency_rules::{parse_rate, Rate};
///
/// assert_eq!(parse_rate("100/s"), Ok(Rate::per_second(100)));
/// assert_eq!(parse_rate("10/100ms"), Ok(Rate::new(10, Duration::from_millis(100))));
/// assert_eq!(parse_rate("5 / m"), Ok(Rate::per_minute(5)));
/// assert!(parse_rate("100").unwrap_err().contains("such as \"100/s\""));
/// assert!(parse_rate("0/s").unwrap_err().contains("at least 1"));
/// ```
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    const SHAPE: &str =
        "a rate is a whole number of calls per period, such as \"100/s\", \"5/m\" or \"10/100ms\"";
    let Some((count, per)) = text.split_once('/') else {
        return Err(format!("`{}` has no `/`: {SHAPE}", text.trim()));
    };
    let count = count.trim();
    let count: u32 = match count.parse() {
        Ok(0) => {
            return Err(format!(
                "`{}`: the number of calls must be at least 1: {SHAPE}",
                text.trim()
            ))
        }
        Ok(count) => count,
        Err(_) => {
            return Err(format!(
                "`{count}` is not a whole number of calls (at most {}): {SHAPE}",
                u32::MAX
            ))
        }
    };
    let per = per.trim();
    let starts_with_unit = per.chars().next().is_some_and(char::is_alphabetic);
    let per = if starts_with_unit {
        parse_duration(&format!("1{per}"))
    } else {
        parse_duration(per)
    }
    .map_err(|e| format!("the period of `{}`: {e}: {SHAPE}", text.trim()))?;
    if per.is_zero() {
        return Err(format!(
            "`{}`: the period must be above zero: {SHAPE}",
            text.trim()
        ));
    }
    Ok(Rate { count, per })
}

/// `#[rate_limit]`'s settings: the table that the attribute's arguments, the builder's methods,
/// the settings by name and the docs come from (see the crate's `table` module).
#[macro_export]
#[doc(hidden)]
macro_rules! rate_limit_settings {
    ($($then:ident)::+ ! { $($before:tt)* }) => {
        $($then)::+! { $($before)*
            /// At most this many calls per period, `"100/s"`, `"5/m"` or `"10/100ms"`, paced evenly (GCRA): beyond it and its `burst`, a call is refused with the time until the next permit (`Rejected::retry_after`), or waits with `max_wait`.
            /// Required. The calls of one site share one limit, whatever threads or tasks make
            /// them.
            rate: $crate::Rate as Rate, e.g. "100/s", default none "required";
            /// How many calls may come at once, above the rate's even pace, after a quiet while; at least 1.
            /// `1` spaces every call by the rate's interval (`"100/s"`: 10 ms).
            burst: u32 as Count, e.g. 20, default derived "the rate's number of calls (`\"100/s\"`: 100)";
            /// A call over the limit waits for its permit up to this long, first come first served, instead of being refused at once; `"off"`: refuse at once.
            /// Above zero. A call whose permit is further away than this is refused at once,
            /// with no wait; a waiting call that is dropped gives its permit back when no later
            /// call has taken one since.
            max_wait: ::core::time::Duration as Timeout, e.g. "50ms", default none "refuse at once";
            /// Keyed (`key = ...`): the most keys tracked at once, each with its own limit (about 50 bytes each); a key at rest (its permits all free again) is dropped first.
            /// When every key tracked is busy, a new key shares one limit of the same rate with the
            /// other keys that do not fit, until keys come to rest.
            max_keys: usize as Keys, e.g. 100000, default = 16_384;
        }
    };
}

rate_limit_settings!(crate::table::options! {
    /// A rate limit's options as given; `None` where left out.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct RateLimitOptions<'a> {
        /// The rate limit's name, when one is given.
        pub name: Option<&'a str>,
        /// Arguments written whose value could not be read (malformed, or an expression checked
        /// at first use): they count as given.
        pub written: &'a [&'a str],
        /// Whether the limit is keyed (`key = ...`): `max_keys` applies only then.
        pub key: bool,
    }
});

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use resiliency_rules::{rate_limit, About, Rate, RateLimitOptions};
///
/// let violations = rate_limit(&RateLimitOptions::default());
/// assert_eq!((violations[0].argument(), violations[0].about()), ("rate", About::Presence));
///
/// let options = RateLimitOptions {
///     rate: Some(Rate::per_second(100)),
///     burst: Some(0),
///     ..RateLimitOptions::default()
/// };
/// assert_eq!(rate_limit(&options)[0].argument(), "burst");
/// ```
pub fn rate_limit(options: &RateLimitOptions<'_>) -> Vec<Violation> {
    let o = options;
    let mut out = Vec::new();
    name_rule(o.name, &mut out);
    match o.rate {
        None if !o.written.contains(&"rate") => out.push(Violation::presence(
            "rate",
            "`rate` is required: how many calls per period, such as `#[rate_limit(\"100/s\")]` or `#[rate_limit(rate = \"100/s\")]`",
        )),
        Some(rate) if rate.count == 0 || rate.per.is_zero() => out.push(Violation::value(
            "rate",
            "`rate` must be at least one call per period above zero, such as `rate = \"100/s\"`",
        )),
        _ => {}
    }
    if o.burst == Some(0) {
        out.push(Violation::value(
            "burst",
            "`burst` must be at least 1: `burst = 1` spaces calls evenly at the rate; leave it out for the rate's number of calls",
        ));
    }
    above_zero("max_wait", o.max_wait, &mut out);
    if o.max_keys == Some(0) {
        out.push(Violation::value(
            "max_keys",
            "`max_keys` must be at least 1, e.g. `max_keys = 100000`",
        ));
    }
    if !o.key && (o.max_keys.is_some() || o.written.contains(&"max_keys")) {
        out.push(Violation::presence(
            "max_keys",
            "`max_keys` applies to keyed rate limits; add `key = ...` or remove it",
        ));
    }
    out
}
