//! A rate limit's options as a site's: [`RateLimitBuilder`] under the settings by name, and the
//! set-up of a `#[rate_limit]` site.

use resiliency_rules::Violation;

use super::builder::RateLimitBuilder;
use super::rate_limit::RateLimit;
use crate::options::{Options, Policy, Target};
use crate::settings;

impl Options for RateLimitBuilder {
    const POLICY: Policy = Policy::RateLimit;

    fn site(&self) -> &str {
        self.name
    }

    fn violations(&self) -> Vec<Violation> {
        RateLimitBuilder::violations(self)
    }
}

impl Target<RateLimitBuilder> for &'static RateLimit {
    fn apply(&self, options: &RateLimitBuilder) {
        RateLimit::apply(self, options);
    }
}

/// A new rate limit for the `#[rate_limit]` site called `name`, from its attribute's options
/// (`attribute`), each setting that breaks a rule left at its default (and logged), with the
/// run-time overrides on top; from then on, changes to the settings reach it. For the registry
/// to register ([`super::registry::set_up`]). Should `rate` be unusable (written as an expression
/// the rules refuse: logged as an error), calls are admitted with no limit rather than all
/// refused, until the settings by name give one.
pub(crate) fn set_up(name: &'static str, attribute: RateLimitBuilder) -> &'static RateLimit {
    let attribute = settings::usable(attribute).unwrap_or_else(|| RateLimit::builder(name));
    let limit: &'static RateLimit = Box::leak(Box::new(RateLimit::new(name)));
    limit.apply(&attribute);
    settings::attach(attribute, limit);
    limit
}
