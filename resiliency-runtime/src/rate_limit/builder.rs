//! [`RateLimitBuilder`]: a rate limit's options, checked against the rules before it is built
//! or registered.

use resiliency_rules::RateLimitOptions;

use super::rate_limit::RateLimit;
use crate::options::Options as _;
use crate::ConfigError;

/// Builds a [`RateLimit`] from code, with the options of `#[rate_limit(...)]` (each method named
/// like the attribute's argument) and the same rules: [`build`](Self::build) refuses what the
/// attribute refuses at compile time.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct RateLimitBuilder {
    pub(super) name: &'static str,
    /// The settings given, as the rules check them (`name` unused).
    pub(super) options: RateLimitOptions<'static>,
}

resiliency_rules::rate_limit_settings!(crate::options::table::builder! {
    RateLimitBuilder.options;
});

impl RateLimitBuilder {
    pub(super) fn new(name: &'static str) -> Self {
        RateLimitBuilder {
            name,
            options: RateLimitOptions::default(),
        }
    }

    /// The rate limit, or every rule its options break.
    pub fn build(self) -> Result<RateLimit, ConfigError> {
        self.check()?;
        let limit = RateLimit::new(self.name);
        limit.apply(&self);
        Ok(limit)
    }

    /// Every rule the options break.
    pub(super) fn violations(&self) -> Vec<resiliency_rules::Violation> {
        // Any rate limit may serve keyed calls ([`RateLimit::call_keyed`]): `max_keys` applies.
        crate::options::checked(resiliency_rules::rate_limit(&RateLimitOptions {
            name: Some(self.name),
            key: true,
            ..self.options.clone()
        }))
    }
}
