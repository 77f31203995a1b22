//! [`TimeoutBuilder`]: a time limit's options, checked against the rules before it is built or
//! registered.

use resiliency_rules::TimeoutOptions;

use super::timeout::Timeout;
use crate::options::Options as _;
use crate::ConfigError;

/// Builds a [`Timeout`] from code, with the options of `#[timeout(...)]` (each method named like
/// the attribute's argument) and the same rules: [`build`](Self::build) refuses what the
/// attribute refuses at compile time.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct TimeoutBuilder {
    pub(super) name: &'static str,
    /// The settings given, as the rules check them (`name` unused).
    pub(super) options: TimeoutOptions<'static>,
}

resiliency_rules::timeout_settings!(crate::options::table::builder! {
    TimeoutBuilder.options;
});

impl TimeoutBuilder {
    pub(super) fn new(name: &'static str) -> Self {
        TimeoutBuilder {
            name,
            options: TimeoutOptions::default(),
        }
    }

    /// The time limit, or every rule its options break.
    pub fn build(self) -> Result<Timeout, ConfigError> {
        self.check()?;
        let limit = Timeout::new(self.name);
        limit.apply(&self);
        Ok(limit)
    }

    /// Every rule the options break.
    pub(super) fn violations(&self) -> Vec<resiliency_rules::Violation> {
        crate::options::checked(resiliency_rules::timeout(&TimeoutOptions {
            name: Some(self.name),
            ..self.options.clone()
        }))
    }
}
