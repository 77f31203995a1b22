//! Guards by name, registered from code ([`TooBusyBuilder::register`]): what the `tower` layer
//! and code that outlives one call use, with the run-time settings by name on them.

use super::guard::{TooBusy, TooBusyBuilder};
use crate::named::Named;
use crate::ConfigError;

static REGISTRY: Named<TooBusy> = Named::new();

impl TooBusyBuilder {
    /// Builds the guard and registers it under its name, once per name for the life of the
    /// process (the guard is leaked, as calls borrow it for `'static`): [`get`] returns it, and
    /// the run-time settings by name ([`settings`](crate::settings)) apply to it, these options
    /// being its defaults. If the name is taken, returns the registered guard (the first
    /// registration's options win).
    ///
    /// ```
    /// use resilient_runtime::busy::{self, TooBusy};
    ///
    /// let guard = TooBusy::builder("checkout").max_in_flight(64).register().unwrap();
    /// let again = TooBusy::builder("checkout").max_in_flight(8).register().unwrap();
    /// assert!(std::ptr::eq(guard, again));
    /// assert_eq!(busy::get("checkout").unwrap().in_flight_limit(), Some(64));
    /// ```
    pub fn register(self) -> Result<&'static TooBusy, ConfigError> {
        ConfigError::from_violations("too_busy", self.name, self.violations())?;
        REGISTRY.get_or_register(self.name, || {
            let guard: &'static TooBusy = Box::leak(Box::new(TooBusy::new(self.name)));
            guard.apply(&self);
            crate::settings::attach(self, guard);
            Ok(guard)
        })
    }
}

/// The guard registered under `name` ([`TooBusyBuilder::register`]), if any.
pub fn get(name: &str) -> Option<&'static TooBusy> {
    REGISTRY.get(name)
}
