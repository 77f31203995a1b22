//! Guards by name, registered from code ([`TooBusyBuilder::register`]) or set up by a
//! `#[too_busy]` fn's first call: what the `tower` layer and code that outlives one call use,
//! with the run-time settings by name on them.

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

/// The guard registered under `name` ([`TooBusyBuilder::register`]), or else the guard of the
/// `#[too_busy]` fn of that path (such as `my_app::api::search`) once a call has set it up; the
/// first of the two to take a name keeps it. What code reads a guard's state from, such as the
/// limit `max_in_flight = "auto"` has learned (the facade's `#[too_busy]` docs show one).
pub fn get(name: &str) -> Option<&'static TooBusy> {
    REGISTRY.get(name)
}

/// A `#[too_busy]` site's guard, set up: known to [`get`] by its name unless taken.
pub(crate) fn offer(guard: &'static TooBusy) {
    REGISTRY.offer(guard.name(), guard);
}
