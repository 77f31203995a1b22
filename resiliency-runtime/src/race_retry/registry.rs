//! Raced policies by name, registered from code ([`RaceRetryBuilder::register`]) or set up by a
//! `#[race_retry]` fn's first call: one policy per name, whichever made it, which the `tower`
//! layer and the attribute's sites share, with the run-time settings by name on it.

use super::builder::RaceRetryBuilder;
use super::policy::RaceRetry;
use crate::named::Named;
use crate::ConfigError;

static REGISTRY: Named<RaceRetry> = Named::new();

impl RaceRetryBuilder {
    /// Builds the policy and registers it under its name, once per name for the life of the
    /// process (the policy is leaked, as calls borrow it for `'static`): [`get`] returns it, and
    /// the run-time settings by name ([`settings`](crate::settings)) apply to it, these options
    /// being its defaults. If the name is taken, returns the registered policy (the first
    /// registration's options win).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::race_retry::{self, RaceRetry};
    ///
    /// let policy = RaceRetry::builder("search").total(Duration::from_millis(300)).register().unwrap();
    /// assert!(std::ptr::eq(policy, race_retry::get("search").unwrap()));
    /// ```
    pub fn register(self) -> Result<&'static RaceRetry, ConfigError> {
        // Checked first, registered or not: invalid options are an error wherever they are given.
        ConfigError::from_violations("race_retry", self.name, self.violations())?;
        REGISTRY.get_or_register(self.name, || {
            let policy: &'static RaceRetry = Box::leak(Box::new(self.clone().build()?));
            crate::settings::attach(self, policy);
            Ok(policy)
        })
    }
}

/// The policy registered under `name`: by [`RaceRetryBuilder::register`], or by the first call
/// of a `#[race_retry]` fn of that name (its `name = "..."`, or else its path, such as
/// `my_app::db::lookup`); the first of these to take a name keeps it, and the others use its
/// policy.
pub fn get(name: &str) -> Option<&'static RaceRetry> {
    REGISTRY.get(name)
}

/// The policy registered under `name`, or the one `set_up` makes, registered now.
pub(crate) fn get_or_set_up(
    name: &'static str,
    set_up: impl FnOnce() -> &'static RaceRetry,
) -> &'static RaceRetry {
    REGISTRY.get_or_insert_with(name, set_up)
}
