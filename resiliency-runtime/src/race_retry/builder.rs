//! [`RaceRetryBuilder`]: a race policy's options, checked against the rules before it is built
//! or registered.

use resiliency_rules::{Backoff, Budget, RaceRetryOptions};

use super::race_retry::RaceRetry;
use crate::options::Options as _;
use crate::ConfigError;

/// Builds a [`RaceRetry`] from code, with the options of `#[race_retry(...)]` (each method named
/// like the attribute's argument) and the same rules: [`build`](Self::build) refuses what the
/// attribute refuses at compile time.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct RaceRetryBuilder {
    pub(super) name: &'static str,
    /// The settings given, as the rules check them (`name` and `written` unused).
    pub(super) options: RaceRetryOptions<'static>,
}

resiliency_rules::race_retry_settings!(crate::options::table::builder! {
    RaceRetryBuilder.options;
});

impl RaceRetryBuilder {
    /// No budget: every extra attempt that `retries`, `after` and failures call for starts, however
    /// many calls fail (an outage then meets `retries + 1` times its load).
    pub fn no_budget(mut self) -> Self {
        self.options.budget = Some(Budget::Off);
        self
    }

    /// No backoff: an attempt that replaces a failed one starts at once (excludes the other
    /// `backoff` settings).
    pub fn no_backoff(mut self) -> Self {
        self.options.backoff = Some(Backoff::Off);
        self
    }

    /// The raced function, or every rule its options break.
    pub fn build(self) -> Result<RaceRetry, ConfigError> {
        self.check()?;
        let policy = RaceRetry::new(self.name);
        policy.apply(&self);
        Ok(policy)
    }

    /// Every rule the options break (`after` at its default where left out: a `total` must
    /// leave room for a percentile too).
    pub(super) fn violations(&self) -> Vec<resiliency_rules::Violation> {
        crate::options::checked(resiliency_rules::race_retry(&RaceRetryOptions {
            name: Some(self.name),
            after: Some(self.options.after()),
            ..self.options.clone()
        }))
    }
}
