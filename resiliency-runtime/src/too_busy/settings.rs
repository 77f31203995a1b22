//! A guard's options as a site's: [`TooBusyBuilder`] under the settings by name (its settings
//! are read and written by name through the table's `ByName`), and the set-up of a
//! `#[too_busy]` site.

use resiliency_rules::Violation;

use super::builder::TooBusyBuilder;
use super::too_busy::TooBusy;
use crate::options::{Options, Policy, Target};
use crate::settings;

impl Options for TooBusyBuilder {
    const POLICY: Policy = Policy::TooBusy;

    fn site(&self) -> &str {
        self.name
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

/// A new guard for the `#[too_busy]` site called `name`, from its attribute's options
/// (`attribute`), each setting that breaks a rule left at its default (and logged), with the
/// run-time overrides on top; from then on, changes to the settings reach it. For the registry
/// to register ([`super::registry::set_up`]).
pub(crate) fn set_up(name: &'static str, attribute: TooBusyBuilder) -> &'static TooBusy {
    let attribute = settings::usable(attribute).unwrap_or_else(|| TooBusy::builder(name));
    let guard: &'static TooBusy = Box::leak(Box::new(TooBusy::new(name)));
    guard.apply(&attribute);
    settings::attach(attribute, guard);
    guard
}
