//! A raced function's options as a site's: [`RaceRetryBuilder`] under the settings by name (its
//! settings are read and written by name through the table's `ByName`), and the set-up of a
//! `#[race_retry]` site.

use std::time::Duration;

use resiliency_rules::Violation;

use super::builder::RaceRetryBuilder;
use super::race_retry::{After, RaceRetry};
use crate::options::{Options, Policy, Target};
use crate::settings;

impl Options for RaceRetryBuilder {
    const POLICY: Policy = Policy::RaceRetry;

    fn site(&self) -> &str {
        self.name
    }

    fn violations(&self) -> Vec<Violation> {
        RaceRetryBuilder::violations(self)
    }
}

impl Target<RaceRetryBuilder> for &'static RaceRetry {
    fn apply(&self, options: &RaceRetryBuilder) {
        RaceRetry::apply(self, options);
    }
}

/// The deadline of a site whose own options cannot be used: far enough never to matter.
const ONCE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A new policy for the `#[race_retry]` site called `name`, from its attribute's options
/// (`attribute`), each setting that breaks a rule left at its default (and logged), with the
/// run-time overrides on top; from then on, changes to the settings reach it. For the registry to
/// register ([`super::registry::set_up`]). Should the options stay unusable (the required `total`
/// at fault), each call runs once, with no deadline, rather than panic in a request path.
pub(crate) fn set_up(name: &'static str, attribute: RaceRetryBuilder) -> &'static RaceRetry {
    let attribute = settings::usable(attribute).unwrap_or_else(|| {
        RaceRetry::builder(name)
            .retries(1)
            .total(ONCE)
            .after(After::Fixed(ONCE))
            .no_budget()
            .no_backoff()
    });
    let race: &'static RaceRetry = Box::leak(Box::new(RaceRetry::new(name)));
    race.apply(&attribute);
    settings::attach(attribute, race);
    race
}
