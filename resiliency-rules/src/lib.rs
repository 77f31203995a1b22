//! The settings and configuration rules of the `resiliency` policies, each written once: the
//! attributes check the rules at compile time (pointing at the token to change) and the builders
//! at run time (a `ConfigError`).
//!
//! Each policy's settings are declared in one table (`breaker_settings!`, `race_retry_settings!`,
//! `too_busy_settings!`, `timeout_settings!`, `rate_limit_settings!`, hidden: see the `table` module's source), which every crate of the
//! workspace reads: the options structs below, the attributes' arguments, the builders' methods,
//! the settings by name and the docs' tables all come from it, each setting's default included:
//! a setting with a fixed default has an accessor of its name on its options struct that gives
//! the value in force (`options.error_threshold()`, beside `options.error_threshold`, the value
//! as given). The list of policies is declared once too (`policies!`, hidden: see the `policies`
//! module's source): each policy's names, its options struct, its rules and its table.
//!
//! For each policy, a plain struct holds the options as given ([`BreakerOptions`],
//! [`RaceRetryOptions`], [`TooBusyOptions`], [`TimeoutOptions`], [`RateLimitOptions`]) and a
//! function returns every [`Violation`] of its rules at once ([`breaker`], [`race_retry`],
//! [`too_busy`], [`timeout`], [`rate_limit`]). An option left out is `None`; the
//! `written` list names arguments that were written but whose value cannot be read at compile
//! time (a malformed literal, or an expression such as a `const` that the builder checks at
//! first use), so that a rule about an argument's presence does not report it missing while the
//! rules about its value are skipped.
//!
//! ```
//! use std::time::Duration;
//! use resiliency_rules::{breaker, About, BreakerOptions};
//!
//! let options = BreakerOptions {
//!     capacity: Some(1.5),
//!     timeout: Some(Duration::from_secs(2)),
//!     ..BreakerOptions::default()
//! };
//! let violations = breaker(&options);
//! assert_eq!(violations.len(), 1);
//! assert_eq!(violations[0].argument(), "capacity");
//! assert_eq!(violations[0].about(), About::Value);
//! assert!(violations[0].to_string().starts_with("`capacity` must lie between 0 and 1"));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::fmt;

mod breaker;
mod duration;
mod policies;
mod race_retry;
mod rate_limit;
mod table;
mod timeout;
mod too_busy;

pub use breaker::{breaker, BreakerOptions, BREAKER_EXCLUSIVE, MAX_COUNT};
pub use duration::parse_duration;
pub use race_retry::{
    race_retry, After, Backoff, Budget, RaceRetryOptions, MAX_BUDGET_SHARE, MAX_RETRIES,
    MIN_BUDGET_SHARE,
};
pub use rate_limit::{parse_rate, rate_limit, Rate, RateLimitOptions};
pub use timeout::{timeout, TimeoutOptions};
pub use too_busy::{too_busy, InFlight, TooBusyOptions};

/// What a [`Violation`] is about: the value given, or whether the argument is there at all.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum About {
    /// The argument's value is out of range (a macro points at the literal).
    Value,
    /// The argument is missing something it needs, or conflicts with another (a macro points at
    /// the argument's name; for a missing required argument, at the attribute).
    Presence,
}

/// One broken rule: the argument to change and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    argument: &'static str,
    about: About,
    message: String,
    involves: &'static [&'static str],
    order: Option<std::cmp::Ordering>,
}

impl Violation {
    fn value(argument: &'static str, message: impl Into<String>) -> Self {
        Violation {
            argument,
            about: About::Value,
            message: message.into(),
            involves: &[],
            order: None,
        }
    }

    fn presence(argument: &'static str, message: impl Into<String>) -> Self {
        Violation {
            argument,
            about: About::Presence,
            message: message.into(),
            involves: &[],
            order: None,
        }
    }

    /// The rule involves `others` too: changing one of them can break it.
    fn involving(mut self, others: &'static [&'static str]) -> Self {
        self.involves = others;
        self
    }

    /// The rule orders the argument against the first of [`involves`](Self::involves): `Less`,
    /// the argument must be below it; `Greater`, the argument must not be below it.
    fn ordered(mut self, order: std::cmp::Ordering) -> Self {
        self.order = Some(order);
        self
    }

    /// The argument to change: the attribute argument's name, which is also the builder method's.
    pub fn argument(&self) -> &'static str {
        self.argument
    }

    /// Whether the rule is about the argument's value or its presence.
    pub fn about(&self) -> About {
        self.about
    }

    /// The other arguments the rule involves, such as `total` for "`after` must be below
    /// `total`": a change to one of them can break it too.
    pub fn involves(&self) -> &'static [&'static str] {
        self.involves
    }

    /// For a rule that orders the argument against the first of [`involves`](Self::involves):
    /// `Less` when the argument must be below it, `Greater` when it must not be below it.
    pub fn order(&self) -> Option<std::cmp::Ordering> {
        self.order
    }

    /// What is wrong and what is valid (the same text as the Display).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn name_rule(name: Option<&str>, out: &mut Vec<Violation>) {
    if name == Some("") {
        out.push(Violation::value("name", "`name` must not be empty"));
    }
}

fn above_zero(
    argument: &'static str,
    value: Option<std::time::Duration>,
    out: &mut Vec<Violation>,
) {
    if value.is_some_and(|d| d.is_zero()) {
        out.push(Violation::value(
            argument,
            format!("`{argument}` must be above zero, e.g. `{argument} = \"450ms\"`"),
        ));
    }
}

#[cfg(test)]
mod tests;
