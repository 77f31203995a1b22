//! A guard's settings by name: [`TooBusyBuilder`] read and written setting by setting, and the
//! set-up of a `#[too_busy]` site.

use resiliency_rules::Violation;

use super::builder::TooBusyBuilder;
use super::guard::TooBusy;
use crate::settings::{self, Options, Policy, Target, Value};

impl Options for TooBusyBuilder {
    const POLICY: Policy = Policy::TooBusy;

    fn site(&self) -> &str {
        self.name
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
