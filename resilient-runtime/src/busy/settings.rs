//! A guard's settings by name: [`TooBusyBuilder`] read and written setting by setting, and the
//! set-up of a `#[too_busy]` site.

use resilient_rules::Violation;

use super::guard::{TooBusy, TooBusyBuilder};
use crate::settings::{self, duration_or_off, is_off, Options, Policy, Target, Value};

impl Options for TooBusyBuilder {
    const POLICY: Policy = Policy::TooBusy;

    fn site(&self) -> &str {
        self.name
    }

    fn get(&self, setting: &'static str) -> Option<Value> {
        match setting {
            "max_lag" => self.max_lag.map(Value::from),
            "max_in_flight" => self.max_in_flight.map(Value::from),
            "max_latency" => self.max_latency.map(Value::from),
            _ => None,
        }
    }

    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String> {
        match setting {
            "max_lag" => self.max_lag = duration_or_off(setting, value)?,
            "max_in_flight" if is_off(value) => self.max_in_flight = None,
            "max_in_flight" => self.max_in_flight = Some(settings::count(setting, value)?),
            "max_latency" => self.max_latency = duration_or_off(setting, value)?,
            _ => return Err(format!("`{setting}` is not a too_busy setting")),
        }
        Ok(())
    }

    fn unset(&mut self, setting: &'static str) {
        match setting {
            "max_lag" => self.max_lag = None,
            "max_in_flight" => self.max_in_flight = None,
            "max_latency" => self.max_latency = None,
            _ => {}
        }
    }

    fn violations(&self) -> Vec<Violation> {
        TooBusyBuilder::violations(self)
    }
}

impl Target<TooBusyBuilder> for &'static TooBusy {
    fn apply(&self, options: &TooBusyBuilder) {
        TooBusy::apply(self, options);
    }
}

/// Whether `value` is one `setting` takes.
pub(crate) fn check_value(setting: &'static str, value: &Value) -> Result<(), String> {
    TooBusy::builder("*").set(setting, value)
}

/// Sets up the guard of a `#[too_busy]` site: the attribute's options (`configure`), each
/// setting that breaks a rule left at its default (and logged), with the run-time overrides on
/// top; from then on, changes to the settings reach it.
pub(crate) fn set_up(guard: &'static TooBusy, configure: fn(TooBusyBuilder) -> TooBusyBuilder) {
    let name = guard.name();
    let attribute = settings::usable(configure(TooBusy::builder(name)))
        .unwrap_or_else(|| TooBusy::builder(name));
    settings::attach(attribute, guard);
}
