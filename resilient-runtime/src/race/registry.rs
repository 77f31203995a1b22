//! Raced policies by name, registered from code ([`RaceRetryBuilder::register`]): what the
//! `tower` layer uses, with the run-time settings by name on them.

use super::policy::{RaceRetry, RaceRetryBuilder};
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
    /// use resilient_runtime::race::{self, RaceRetry};
    ///
    /// let policy = RaceRetry::builder("search").total(Duration::from_millis(300)).register().unwrap();
    /// assert!(std::ptr::eq(policy, race::get("search").unwrap()));
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

/// The policy registered under `name` ([`RaceRetryBuilder::register`]), if any.
pub fn get(name: &str) -> Option<&'static RaceRetry> {
    REGISTRY.get(name)
}
