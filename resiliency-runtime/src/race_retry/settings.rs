//! A raced function's settings by name: [`RaceRetryBuilder`] read and written setting by
//! setting, and the set-up of a `#[race_retry]` site.

use std::time::Duration;

use resiliency_rules::Violation;

use super::builder::RaceRetryBuilder;
use super::policy::{After, RaceRetry};
use crate::settings::{self, count, duration, is_off, number, Options, Policy, Target, Value};

impl Options for RaceRetryBuilder {
    const POLICY: Policy = Policy::RaceRetry;

    fn site(&self) -> &str {
        self.name
    }

    fn get(&self, setting: &'static str) -> Option<Value> {
        match setting {
            "retries" => self.retries.map(Value::from),
            "after" => self.after.map(|after| match after {
                After::Fixed(d) => Value::from(d),
                After::Percentile(q) => Value::Text(format!("p{}", q * 100.0)),
            }),
            "total" => self.total.map(Value::from),
            "each" => self.each.map(Value::from),
            "budget" if self.no_budget => Some("off".into()),
            "budget" => self.budget.map(Value::from),
            "backoff" if self.no_backoff => Some("off".into()),
            "backoff" => self.backoff.map(Value::from),
            "backoff_factor" => self.backoff_factor.map(Value::from),
            "backoff_max" => self.backoff_max.map(Value::from),
            _ => None,
        }
    }

    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String> {
        match setting {
            "retries" => self.retries = Some(count(setting, value)?),
            "after" => self.after = Some(after(value)?),
            "total" => self.total = Some(duration(setting, value)?),
            "each" if is_off(value) => self.each = None,
            "each" => self.each = Some(duration(setting, value)?),
            "budget" if is_off(value) => (self.budget, self.no_budget) = (None, true),
            "budget" => (self.budget, self.no_budget) = (Some(number(setting, value)?), false),
            "backoff" if is_off(value) => (self.backoff, self.no_backoff) = (None, true),
            "backoff" => (self.backoff, self.no_backoff) = (Some(duration(setting, value)?), false),
            "backoff_factor" => self.backoff_factor = Some(number(setting, value)?),
            "backoff_max" => self.backoff_max = Some(duration(setting, value)?),
            _ => return Err(format!("`{setting}` is not a race_retry setting")),
        }
        Ok(())
    }

    fn unset(&mut self, setting: &'static str) {
        match setting {
            "retries" => self.retries = None,
            "after" => self.after = None,
            "total" => self.total = None,
            "each" => self.each = None,
            "budget" => (self.budget, self.no_budget) = (None, false),
            "backoff" => (self.backoff, self.no_backoff) = (None, false),
            "backoff_factor" => self.backoff_factor = None,
            "backoff_max" => self.backoff_max = None,
            _ => {}
        }
    }

    fn violations(&self) -> Vec<Violation> {
        RaceRetryBuilder::violations(self)
    }
}

/// `after`: a duration, or a percentile written as the attribute writes it (`"p95"`, `"p99.9"`).
fn after(value: &Value) -> Result<After, String> {
    if let Value::Text(text) = value {
        if let Some(percent) = text.trim().strip_prefix('p') {
            return match percent.parse::<f64>() {
                Ok(percent) => Ok(After::Percentile(percent / 100.0)),
                Err(_) => Err(format!(
                    "`after` must be a duration such as \"150ms\" or a percentile such as \"p95\", got {value}"
                )),
            };
        }
    }
    duration("after", value).map(After::Fixed).map_err(|_| {
        format!("`after` must be a duration such as \"150ms\" or a percentile such as \"p95\", got {value}")
    })
}

impl Target<RaceRetryBuilder> for &'static RaceRetry {
    fn apply(&self, options: &RaceRetryBuilder) {
        RaceRetry::apply(self, options);
    }
}

/// Whether `value` is one `setting` takes.
pub(crate) fn check_value(setting: &'static str, value: &Value) -> Result<(), String> {
    RaceRetry::builder("*").set(setting, value)
}

/// The deadline of a site whose own options cannot be used: far enough never to matter.
const ONCE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The policy of a `#[race_retry]` site called `name`: the one registered under that name, or
/// else one set up now with the attribute's options (`configure`), each setting that breaks a
/// rule left at its default (and logged), with the run-time overrides on top, and registered;
/// from then on, changes to the settings reach it. Should the options stay unusable (the required
/// `total` at fault), each call runs once, with no deadline, rather than panic in a request path.
pub(crate) fn set_up(
    name: &'static str,
    configure: fn(RaceRetryBuilder) -> RaceRetryBuilder,
) -> &'static RaceRetry {
    super::registry::get_or_set_up(name, || {
        let attribute =
            settings::usable(configure(RaceRetry::builder(name))).unwrap_or_else(|| {
                RaceRetry::builder(name)
                    .retries(1)
                    .total(ONCE)
                    .after(After::Fixed(ONCE))
                    .no_budget()
                    .no_backoff()
            });
        // Placeholders: `attach` puts the options in force before any call.
        let race: &'static RaceRetry = Box::leak(Box::new(RaceRetry::new(
            name,
            0,
            After::Fixed(Duration::ZERO),
            Duration::ZERO,
        )));
        settings::attach(attribute, race);
        race
    })
}
