//! A guard's settings by name: [`TooBusyBuilder`] read and written setting by setting, and the
//! set-up of a `#[too_busy]` site.

use resiliency_rules::Violation;

use super::builder::TooBusyBuilder;
use super::guard::TooBusy;
use crate::settings::{self, duration_or_off, is_off, Options, Policy, Target, Value};

impl Options for TooBusyBuilder {
    const POLICY: Policy = Policy::TooBusy;

    fn site(&self) -> &str {
        self.name
    }

    fn get(&self, setting: &'static str) -> Option<Value> {
        match setting {
            "max_lag" => self.max_lag.map(Value::from),
            "max_in_flight" if self.max_in_flight_auto => Some(AUTO.into()),
            "max_in_flight" => self.max_in_flight.map(Value::from),
            "auto_min" => self.auto_min.map(Value::from),
            "auto_max" => self.auto_max.map(Value::from),
            "auto_initial" => self.auto_initial.map(Value::from),
            "max_latency" => self.max_latency.map(Value::from),
            _ => None,
        }
    }

    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String> {
        match setting {
            "max_lag" => self.max_lag = duration_or_off(setting, value)?,
            "max_in_flight" if is_off(value) => {
                (self.max_in_flight, self.max_in_flight_auto) = (None, false);
            }
            "max_in_flight" if is_auto(value) => {
                (self.max_in_flight, self.max_in_flight_auto) = (None, true);
            }
            "max_in_flight" => {
                let limit = settings::count(setting, value)
                    .map_err(|e| format!("{e}, \"auto\" to learn it, or \"off\" for no limit"))?;
                (self.max_in_flight, self.max_in_flight_auto) = (Some(limit), false);
            }
            "auto_min" => self.auto_min = Some(settings::count(setting, value)?),
            "auto_max" => self.auto_max = Some(settings::count(setting, value)?),
            "auto_initial" => self.auto_initial = Some(settings::count(setting, value)?),
            "max_latency" => self.max_latency = duration_or_off(setting, value)?,
            _ => return Err(format!("`{setting}` is not a too_busy setting")),
        }
        Ok(())
    }

    fn unset(&mut self, setting: &'static str) {
        match setting {
            "max_lag" => self.max_lag = None,
            "max_in_flight" => (self.max_in_flight, self.max_in_flight_auto) = (None, false),
            "auto_min" => self.auto_min = None,
            "auto_max" => self.auto_max = None,
            "auto_initial" => self.auto_initial = None,
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

/// The word `max_in_flight` takes for a learned limit.
const AUTO: &str = "auto";

fn is_auto(value: &Value) -> bool {
    matches!(value, Value::Text(text) if text.trim().eq_ignore_ascii_case(AUTO))
}

/// Whether `value` is one `setting` takes.
pub(crate) fn check_value(setting: &'static str, value: &Value) -> Result<(), String> {
    TooBusy::builder("*").set(setting, value)
}

/// The guard of a `#[too_busy]` site called `name`: the one registered under that name, or else
/// one set up now with the attribute's options (`configure`), each setting that breaks a rule
/// left at its default (and logged), with the run-time overrides on top, and registered; from
/// then on, changes to the settings reach it.
pub(crate) fn set_up(
    name: &'static str,
    configure: fn(TooBusyBuilder) -> TooBusyBuilder,
) -> &'static TooBusy {
    super::registry::get_or_set_up(name, || {
        let attribute = settings::usable(configure(TooBusy::builder(name)))
            .unwrap_or_else(|| TooBusy::builder(name));
        let guard: &'static TooBusy = Box::leak(Box::new(TooBusy::new(name)));
        settings::attach(attribute, guard);
        guard
    })
}
