//! A breaker's settings by name: [`BreakerBuilder`] read and written setting by setting, put in
//! force on registered breakers and keyed families.

use std::sync::Arc;

use resiliency_rules::Violation;

use super::config::BreakerBuilder;
use super::engine::Breaker;
use super::keyed::KeyedBreaker;
use crate::settings::{Options, Policy, Target, Value};

impl Options for BreakerBuilder {
    const POLICY: Policy = Policy::Breaker;
    const EXCLUSIVE: &'static [(&'static str, &'static str, &'static str)] =
        resiliency_rules::BREAKER_EXCLUSIVE;

    fn site(&self) -> &str {
        &self.name
    }

    fn get(&self, setting: &'static str) -> Option<Value> {
        self.get_setting(setting)
    }

    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String> {
        self.set_setting(setting, value)
    }

    fn unset(&mut self, setting: &'static str) {
        self.unset_setting(setting)
    }

    fn violations(&self) -> Vec<Violation> {
        resiliency_rules::breaker(&self.options())
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
        match options.validate() {
            Ok(config) => self.reconfigure(Arc::new(config)),
            Err(error) => {
                tracing::error!(target: "resiliency::settings", %error, "options refused")
            }
        }
    }
}

impl Target<BreakerBuilder> for Arc<KeyedBreaker> {
    fn apply(&self, options: &BreakerBuilder) {
        match options.validate() {
            Ok(config) => self.reconfigure(Arc::new(config)),
            Err(error) => {
                tracing::error!(target: "resiliency::settings", %error, "options refused")
            }
        }
    }
}

/// Whether `value` is one `setting` takes.
pub(crate) fn check_value(setting: &'static str, value: &Value) -> Result<(), String> {
    Breaker::builder("*").set(setting, value)
}
