//! Guards by name, registered from code ([`TooBusyBuilder::register`]) or set up by a
//! `#[too_busy]` fn's first call: one guard per name, whichever made it, which the `tower` layer,
//! the attribute's sites and code that outlives one call share, with the run-time settings by
//! name on it.

use super::builder::TooBusyBuilder;
use super::guard::TooBusy;
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
    /// use resiliency::too_busy::{self, TooBusy};
    ///
    /// let guard = TooBusy::builder("checkout").max_in_flight(64).register().unwrap();
    /// let again = TooBusy::builder("checkout").max_in_flight(8).register().unwrap();
    /// assert!(std::ptr::eq(guard, again));
    /// assert_eq!(too_busy::get("checkout").unwrap().in_flight_limit(), Some(64));
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

/// The guard registered under `name`: by [`TooBusyBuilder::register`], or by the first call of a
/// `#[too_busy]` fn of that name (its `name = "..."`, or else its path, such as
/// `my_app::api::search`); the first of these to take a name keeps it, and the others use its
/// guard. What code reads a guard's state from, such as the limit `max_in_flight = "auto"` has
/// learned (the facade's `#[too_busy]` docs show one).
pub fn get(name: &str) -> Option<&'static TooBusy> {
    REGISTRY.get(name)
}

/// The guard registered under `name`, or the one `set_up` makes, registered now.
pub(crate) fn get_or_set_up(
    name: &'static str,
    set_up: impl FnOnce() -> &'static TooBusy,
) -> &'static TooBusy {
    REGISTRY.get_or_insert_with(name, set_up)
}
