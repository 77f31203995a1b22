//! A time limit's options as a site's: [`TimeoutBuilder`] under the settings by name, and the
//! set-up of a `#[timeout]` site.

use std::time::Duration;

use resiliency_rules::Violation;

use super::builder::TimeoutBuilder;
use super::timeout::Timeout;
use crate::options::{Options, Policy, Target};
use crate::settings;

impl Options for TimeoutBuilder {
    const POLICY: Policy = Policy::Timeout;

    fn site(&self) -> &str {
        self.name
    }

    fn violations(&self) -> Vec<Violation> {
        TimeoutBuilder::violations(self)
    }
}

impl Target<TimeoutBuilder> for &'static Timeout {
    fn apply(&self, options: &TimeoutBuilder) {
        Timeout::apply(self, options);
    }
}

/// The limit of a site whose own `total` cannot be used: far enough never to matter.
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A new time limit for the `#[timeout]` site called `name`, from its attribute's options
/// (`attribute`), with the run-time overrides on top; from then on, changes to the settings reach
/// it. For the registry to register ([`super::registry::set_up`]). Should `total` be unusable
/// (written as an expression that gave zero: logged as an error), calls run with no limit rather
/// than panic in a request path, until the settings by name give one.
pub(crate) fn set_up(name: &'static str, attribute: TimeoutBuilder) -> &'static Timeout {
    let attribute =
        settings::usable(attribute).unwrap_or_else(|| Timeout::builder(name).total(NEVER));
    let limit: &'static Timeout = Box::leak(Box::new(Timeout::new(name)));
    limit.apply(&attribute);
    settings::attach(attribute, limit);
    limit
}
