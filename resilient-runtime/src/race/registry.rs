//! Raced policies by name, registered from code ([`RaceRetryBuilder::register`]): what the
//! `tower` layer uses, with the run-time settings by name on them.

use std::collections::HashMap;
use std::sync::Mutex;

use super::policy::{RaceRetry, RaceRetryBuilder};
use crate::ConfigError;

static REGISTRY: Mutex<Option<HashMap<&'static str, &'static RaceRetry>>> = Mutex::new(None);

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
        let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let registry = registry.get_or_insert_with(HashMap::new);
        if let Some(policy) = registry.get(self.name) {
            // Checked all the same: invalid options are an error wherever they are given.
            ConfigError::from_violations("race_retry", self.name, self.violations())?;
            return Ok(policy);
        }
        let policy: &'static RaceRetry = Box::leak(Box::new(self.clone().build()?));
        registry.insert(self.name, policy);
        crate::settings::attach(self, policy);
        Ok(policy)
    }
}

/// The policy registered under `name` ([`RaceRetryBuilder::register`]), if any.
pub fn get(name: &str) -> Option<&'static RaceRetry> {
    REGISTRY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(name)
        .copied()
}
