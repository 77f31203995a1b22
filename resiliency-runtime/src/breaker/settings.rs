//! A breaker's options as a site's: [`BreakerBuilder`] under the settings by name (its settings
//! are read and written by name through the table's `ByName`), put in force on registered
//! breakers and keyed families.

use std::sync::Arc;

use resiliency_rules::Violation;

use super::breaker::Breaker;
use super::builder::BreakerBuilder;
use super::keyed::KeyedBreaker;
use crate::options::{Options, Policy, Target, Value};

impl Options for BreakerBuilder {
    const POLICY: Policy = Policy::Breaker;
    const EXCLUSIVE: &'static [(&'static str, &'static str, &'static str)] =
        resiliency_rules::BREAKER_EXCLUSIVE;

    fn site(&self) -> &str {
        &self.name
    }

    fn violations(&self) -> Vec<Violation> {
        crate::options::checked(resiliency_rules::breaker(&self.options()))
    }

    fn derived(&self, setting: &'static str) -> Option<(Value, &'static str)> {
        match (setting, self.options.capacity, self.options.timeout) {
            ("error_timeout", Some(capacity), Some(timeout)) => Some((
                Value::from(super::capacity_error_timeout(timeout, capacity)),
                "capacity",
            )),
            _ => None,
        }
    }
}

impl Target<BreakerBuilder> for Arc<Breaker> {
    fn apply(&self, options: &BreakerBuilder) {
        self.reconfigure(Arc::new(options.config()));
    }
}

impl Target<BreakerBuilder> for Arc<KeyedBreaker> {
    fn apply(&self, options: &BreakerBuilder) {
        self.reconfigure(Arc::new(options.config()));
    }
}
