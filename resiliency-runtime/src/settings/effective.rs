//! What [`effective`](super::effective) reports: each setting in force at a site, where its
//! value comes from, read back typed.

use super::{Source, Value};

/// A setting in force at a site, and where its value comes from ([`effective`](super::effective)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Effective {
    /// The setting's name.
    pub setting: &'static str,
    /// The value in force: as given, or derived from another setting ([`Source::Derived`]);
    /// `None` where the built-in default applies.
    pub value: Option<Value>,
    /// Where it comes from.
    pub source: Source,
}

impl Effective {
    /// The value as a duration, the same whether the attribute gives it (a [`Duration`]) or an
    /// override (a text such as `"2s"`); `None` for the built-in default, `"off"`, or a value
    /// that is not a duration.
    ///
    /// [`Duration`]: std::time::Duration
    pub fn duration(&self) -> Option<std::time::Duration> {
        self.value.as_ref().and_then(Value::duration)
    }

    /// The value as a number (`capacity`, `failure_rate`, `budget`, ...), from a number or a
    /// text that is one.
    pub fn number(&self) -> Option<f64> {
        self.value.as_ref().and_then(Value::number)
    }

    /// The value as a whole number (`error_threshold`, `retries`, ...), from a number or a
    /// text that is one.
    pub fn count(&self) -> Option<u64> {
        self.value.as_ref().and_then(Value::count)
    }

    /// Whether the setting is switched off (`"off"`).
    pub fn is_off(&self) -> bool {
        self.value.as_ref().is_some_and(Value::is_off)
    }
}

/// Every setting in force at a site ([`effective`](super::effective)): a slice of [`Effective`], one per setting
/// in [`Policy::settings`](super::Policy::settings) order, with typed look-ups by name.
///
/// ```
/// use std::time::Duration;
/// use resiliency::settings::{self, Policy, Source};
/// use resiliency::Breaker;
///
/// Breaker::builder("docs-in-force").timeout(Duration::from_secs(1)).register().unwrap();
/// settings::set(Policy::Breaker, "docs-in-force", "capacity", "0.75").unwrap();
/// let in_force = settings::effective(Policy::Breaker, "docs-in-force").unwrap();
/// assert_eq!(in_force.duration("timeout"), Some(Duration::from_secs(1)));
/// assert_eq!(in_force.number("capacity"), Some(0.75));
/// // Derived from `capacity`: timeout * capacity / (1 - capacity).
/// let open_for = in_force.get("error_timeout").unwrap();
/// assert_eq!(open_for.duration(), Some(Duration::from_secs(3)));
/// assert_eq!(open_for.source.to_string(), "derived from capacity (0.75, set at run time)");
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InForce(pub(super) Vec<Effective>);

impl InForce {
    /// The setting called `setting`.
    pub fn get(&self, setting: &str) -> Option<&Effective> {
        self.0.iter().find(|e| e.setting == setting)
    }

    /// [`Effective::duration`] of `setting`.
    pub fn duration(&self, setting: &str) -> Option<std::time::Duration> {
        self.get(setting).and_then(Effective::duration)
    }

    /// [`Effective::number`] of `setting`.
    pub fn number(&self, setting: &str) -> Option<f64> {
        self.get(setting).and_then(Effective::number)
    }

    /// [`Effective::count`] of `setting`.
    pub fn count(&self, setting: &str) -> Option<u64> {
        self.get(setting).and_then(Effective::count)
    }
}

impl std::ops::Deref for InForce {
    type Target = [Effective];

    fn deref(&self) -> &[Effective] {
        &self.0
    }
}

impl IntoIterator for InForce {
    type Item = Effective;
    type IntoIter = std::vec::IntoIter<Effective>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a InForce {
    type Item = &'a Effective;
    type IntoIter = std::slice::Iter<'a, Effective>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
