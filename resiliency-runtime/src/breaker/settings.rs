//! A breaker's settings by name: [`BreakerBuilder`] read and written setting by setting, put in
//! force on registered breakers and keyed families.

use std::sync::Arc;

use resiliency_rules::Violation;

use super::config::BreakerBuilder;
use super::engine::Breaker;
use super::keyed::KeyedBreaker;
use crate::settings::{
    count, duration, duration_or_off, number, whole, Options, Policy, Target, Value,
};

impl Options for BreakerBuilder {
    const POLICY: Policy = Policy::Breaker;
    const EXCLUSIVE: &'static [(&'static str, &'static str)] = &[
        ("capacity", "error_timeout"),
        ("failure_rate", "error_threshold"),
    ];

    fn site(&self) -> &str {
        &self.name
    }

    fn get(&self, setting: &'static str) -> Option<Value> {
        match setting {
            "error_threshold" => self.error_threshold.map(Value::from),
            "error_window" => self.error_window.map(Value::from),
            "error_timeout" => self.error_timeout.map(Value::from),
            "success_threshold" => self.success_threshold.map(Value::from),
            "capacity" => self.capacity.map(Value::from),
            "timeout" => self.timeout.map(Value::from),
            "half_open_timeout" => self.half_open_timeout.map(Value::from),
            "failure_rate" => self.failure_rate.map(Value::from),
            "min_calls" => self.min_calls.map(Value::from),
            "half_open_calls" => self.half_open_calls.map(Value::from),
            "backoff" => self.backoff.map(Value::from),
            "max_error_timeout" => self.max_error_timeout.map(Value::from),
            "idle_timeout" => self.idle_timeout.map(Value::from),
            "max_keys" => self.max_keys.map(Value::from),
            _ => None,
        }
    }

    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String> {
        match setting {
            "error_threshold" => self.error_threshold = Some(count(setting, value)?),
            "error_window" => self.error_window = Some(duration(setting, value)?),
            "error_timeout" => self.error_timeout = Some(duration(setting, value)?),
            "success_threshold" => self.success_threshold = Some(count(setting, value)?),
            "capacity" => self.capacity = Some(number(setting, value)?),
            "timeout" => self.timeout = duration_or_off(setting, value)?,
            "half_open_timeout" => self.half_open_timeout = duration_or_off(setting, value)?,
            "failure_rate" => self.failure_rate = Some(number(setting, value)?),
            "min_calls" => self.min_calls = Some(count(setting, value)?),
            "half_open_calls" => self.half_open_calls = Some(count(setting, value)?),
            "backoff" => self.backoff = Some(number(setting, value)?),
            "max_error_timeout" => self.max_error_timeout = Some(duration(setting, value)?),
            "idle_timeout" => self.idle_timeout = Some(duration(setting, value)?),
            "max_keys" => {
                let keys = whole(setting, value)?;
                self.max_keys = Some(usize::try_from(keys).unwrap_or(usize::MAX));
            }
            _ => return Err(format!("`{setting}` is not a breaker setting")),
        }
        Ok(())
    }

    fn unset(&mut self, setting: &'static str) {
        match setting {
            "error_threshold" => self.error_threshold = None,
            "error_window" => self.error_window = None,
            "error_timeout" => self.error_timeout = None,
            "success_threshold" => self.success_threshold = None,
            "capacity" => self.capacity = None,
            "timeout" => self.timeout = None,
            "half_open_timeout" => self.half_open_timeout = None,
            "failure_rate" => self.failure_rate = None,
            "min_calls" => self.min_calls = None,
            "half_open_calls" => self.half_open_calls = None,
            "backoff" => self.backoff = None,
            "max_error_timeout" => self.max_error_timeout = None,
            "idle_timeout" => self.idle_timeout = None,
            "max_keys" => self.max_keys = None,
            _ => {}
        }
    }

    fn violations(&self) -> Vec<Violation> {
        resiliency_rules::breaker(&self.options())
    }

    fn derived(&self, setting: &'static str) -> Option<(Value, &'static str)> {
        match (setting, self.capacity, self.timeout) {
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
