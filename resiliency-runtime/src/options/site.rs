//! What a policy's options implement: read and written setting by setting, checked by the
//! policy's rules, and put in force on what the policy runs with.

use resiliency_rules::Violation;

use super::table::ByName;
use super::{Policy, Value};
use crate::ConfigError;

/// A policy's options as its builder holds them, read and written setting by setting.
pub(crate) trait Options: ByName + Clone + Send + Sync + 'static {
    /// The policy.
    const POLICY: Policy;
    /// Pairs of settings that exclude each other, and why (`resiliency_rules`' list): overriding
    /// one drops the attribute's other.
    const EXCLUSIVE: &'static [(&'static str, &'static str, &'static str)] = &[];

    /// The site's name.
    fn site(&self) -> &str;
    /// Every rule the options break.
    fn violations(&self) -> Vec<Violation>;
    /// The value in force for `setting` that another setting gives, and that setting's name,
    /// when one does (a breaker's `error_timeout` from its `capacity`).
    fn derived(&self, _setting: &'static str) -> Option<(Value, &'static str)> {
        None
    }

    /// `Ok` when the options break no rule, and else the error naming this policy, the site and
    /// every rule broken.
    fn check(&self) -> Result<(), ConfigError> {
        ConfigError::from_violations(Self::POLICY.name(), self.site(), self.violations())
    }

    /// The error of this policy's site called `name`, for `message`.
    fn error(name: &str, message: String) -> ConfigError {
        ConfigError::new(Self::POLICY.name(), name, message)
    }
}

/// What a site's options are put in force on: a breaker, a keyed family, a guard, a race.
pub(crate) trait Target<O>: Send + Sync + 'static {
    /// Puts `options`, which break no rule, in force.
    fn apply(&self, options: &O);
}
