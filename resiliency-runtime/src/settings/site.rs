//! A live site as the store sees it: the options its attribute gave (a policy's builder, read
//! and written setting by setting), what they are put in force on, and the faults its options
//! may have.

use std::cmp::Ordering;

use super::store::refs;
use super::{Effective, Policy, Source, Value};
use crate::options::{Options, Target};

/// One rule a site's options break: the setting it is written for, why, and the other settings
/// it involves (a change to one of them can break it too).
pub(crate) struct Fault {
    pub(super) setting: &'static str,
    pub(super) message: String,
    pub(super) involves: &'static [&'static str],
    pub(super) order: Option<Ordering>,
}

impl Fault {
    fn of(setting: &'static str, message: String) -> Self {
        Fault {
            setting,
            message,
            involves: &[],
            order: None,
        }
    }
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.setting, self.message)
    }
}

/// An override as the store hands it to a site: the setting, the value, where it comes from.
pub(crate) type Given = (&'static str, Value, Source);

/// A live site, as the store sees it.
pub(crate) trait Site: Send + Sync + 'static {
    fn policy(&self) -> Policy;
    fn name(&self) -> &str;
    /// The attribute's value for `setting`.
    fn attribute(&self, setting: &'static str) -> Option<Value>;
    /// Checks the attribute's options with `overrides` on top; with `apply`, puts them in force.
    /// `Err` lists each rule broken.
    fn configure(
        &self,
        overrides: &[(&'static str, &Value)],
        apply: bool,
    ) -> Result<(), Vec<Fault>>;
    /// Each setting in force with `overrides` (which break no rule), and where it comes from.
    fn in_force(&self, overrides: &[Given]) -> Vec<Effective>;
}

/// A site: the options its attribute gave, and what they are put in force on.
pub(crate) struct Live<O, T> {
    pub(super) attribute: O,
    pub(super) target: T,
}

impl<O: Options, T: Target<O>> Live<O, T> {
    /// The attribute's options with `overrides` on top (an override of one of two settings
    /// that exclude each other drops the attribute's other), and the values refused.
    fn options(&self, overrides: &[(&'static str, &Value)]) -> (O, Vec<Fault>) {
        let mut options = self.attribute.clone();
        let overridden = |setting: &str| overrides.iter().any(|(s, _)| *s == setting);
        for &(a, b, _) in O::EXCLUSIVE {
            if overridden(a) && !overridden(b) {
                options.unset(b);
            } else if overridden(b) && !overridden(a) {
                options.unset(a);
            }
        }
        let mut faults = Vec::new();
        for (setting, value) in overrides {
            if let Err(why) = options.set(setting, value) {
                faults.push(Fault::of(setting, why));
            }
        }
        (options, faults)
    }
}

impl<O: Options, T: Target<O>> Site for Live<O, T> {
    fn policy(&self) -> Policy {
        O::POLICY
    }

    fn name(&self) -> &str {
        self.attribute.site()
    }

    fn attribute(&self, setting: &'static str) -> Option<Value> {
        self.attribute.get(setting)
    }

    fn configure(
        &self,
        overrides: &[(&'static str, &Value)],
        apply: bool,
    ) -> Result<(), Vec<Fault>> {
        let (options, mut faults) = self.options(overrides);
        if faults.is_empty() {
            faults.extend(options.violations().into_iter().map(|v| Fault {
                setting: v.argument(),
                message: v.message().to_owned(),
                involves: v.involves(),
                order: v.order(),
            }));
        }
        if !faults.is_empty() {
            return Err(faults);
        }
        if apply {
            self.target.apply(&options);
        }
        Ok(())
    }

    fn in_force(&self, overrides: &[Given]) -> Vec<Effective> {
        let (options, _) = self.options(&refs(overrides));
        let given = |setting: &str| overrides.iter().find(|(s, _, _)| *s == setting);
        O::POLICY
            .settings()
            .iter()
            .map(|&setting| {
                let (value, source) = if let Some((_, value, source)) = given(setting) {
                    (Some(value.clone()), source.clone())
                } else if let Some((value, from)) = options.derived(setting) {
                    let (from_value, from_source) = match given(from) {
                        Some((_, v, src)) => (Some(v.clone()), src.clone()),
                        None => (options.get(from), Source::Attribute),
                    };
                    let source = Source::Derived {
                        from,
                        value: from_value.map(|v| v.plain()).unwrap_or_default(),
                        source: Box::new(from_source),
                    };
                    (Some(value), source)
                } else {
                    match options.get(setting) {
                        Some(value) => (Some(value), Source::Attribute),
                        None => (None, Source::Default),
                    }
                };
                Effective {
                    setting,
                    value,
                    source,
                }
            })
            .collect()
    }
}

/// Options that break a rule (a `const` out of range in an attribute) lose each setting at fault,
/// one rule at a time, each reported as an error: the defaults stand in for them. `None` when
/// that does not help (a required setting at fault, reported as such, once).
pub(crate) fn usable<O: Options>(mut options: O) -> Option<O> {
    for _ in 0..=O::POLICY.settings().len() {
        let violations = options.violations();
        let Some(first) = violations.first() else {
            return Some(options);
        };
        let error = crate::ConfigError::from_violations(
            O::POLICY.name(),
            options.site(),
            violations.clone(),
        )
        .expect_err("there are violations");
        let setting = first.argument();
        // A setting the attribute does not give (a required one) cannot be left to its default.
        options.get(setting)?;
        options.unset(setting);
        // Left out, a required setting breaks a rule of its own: there is no default to apply.
        let required = options
            .violations()
            .iter()
            .any(|v| v.argument() == setting && v.about() == resiliency_rules::About::Presence);
        crate::later::emit(move || {
            if required {
                tracing::error!(
                    target: "resiliency::settings",
                    %error,
                    setting,
                    "a required setting of the attribute breaks a rule; the site runs without it, as its docs say"
                )
            } else {
                tracing::error!(
                    target: "resiliency::settings",
                    %error,
                    setting,
                    "a setting of the attribute breaks a rule; its default applies"
                )
            }
        });
        if required {
            return None;
        }
    }
    None
}
