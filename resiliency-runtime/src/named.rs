//! Policies registered by name for the life of the process, leaked once per name: what
//! `TooBusyBuilder::register`, `RaceRetryBuilder::register` and the sites of `#[too_busy]` and
//! `#[race_retry]` keep, and `too_busy::get` and `race_retry::get` read.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::ConfigError;

pub(crate) struct Named<T: 'static> {
    map: Mutex<Option<HashMap<&'static str, &'static T>>>,
}

impl<T: Sync> Named<T> {
    pub(crate) const fn new() -> Self {
        Named {
            map: Mutex::new(None),
        }
    }

    /// The policy registered under `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<&'static T> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()?
            .get(name)
            .copied()
    }

    /// The policy registered under `name`, or the one `make` makes, registered now (under the
    /// lock, as [`get_or_register`](Self::get_or_register)).
    pub(crate) fn get_or_insert_with(
        &self,
        name: &'static str,
        make: impl FnOnce() -> &'static T,
    ) -> &'static T {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let policy = map
            .get_or_insert_with(HashMap::new)
            .entry(name)
            .or_insert_with(make);
        policy
    }

    /// The policy registered under `name`, or the one `make` builds, leaked and registered now.
    /// The lock is held meanwhile, so a second registration of the name waits for `make` (and
    /// the settings it puts in force) and gets the same policy.
    pub(crate) fn get_or_register(
        &self,
        name: &'static str,
        make: impl FnOnce() -> Result<&'static T, ConfigError>,
    ) -> Result<&'static T, ConfigError> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let map = map.get_or_insert_with(HashMap::new);
        if let Some(policy) = map.get(name) {
            return Ok(policy);
        }
        let policy = make()?;
        map.insert(name, policy);
        Ok(policy)
    }
}
