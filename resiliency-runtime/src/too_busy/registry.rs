//! Guards by name, in the one registry of named policies ([`crate::named`]): registered from code
//! ([`TooBusyBuilder::register`]), by a `tower` layer
//! ([`TooBusyLayer::new`](crate::tower::TooBusyLayer::new)) or by a `#[too_busy]` fn's first
//! call. One guard per name, whichever made it, which the layer, the attribute's sites and code
//! that outlives one call share, with the run-time settings by name on it. A name registered
//! again with other options is refused (a builder, a layer) or logged (an attribute's site, which
//! uses the registered guard).

use super::builder::TooBusyBuilder;
use super::too_busy::TooBusy;
use crate::named::{first_difference, Difference, Named, Origin};
use crate::options::{ByName as _, Options as _};
use crate::ConfigError;

static REGISTRY: Named<TooBusy, TooBusyBuilder> = Named::new(differ);

/// The first setting in which two sets of options differ, a setting not given read as its
/// default where it has a fixed one.
fn differ(a: &TooBusyBuilder, b: &TooBusyBuilder) -> Option<Difference> {
    let in_force = |builder: &TooBusyBuilder| TooBusyBuilder {
        options: builder.options.or_defaults(),
        ..builder.clone()
    };
    first_difference(&in_force(a), &in_force(b), |options, setting| {
        options.get(setting)
    })
}

impl TooBusyBuilder {
    /// Builds the guard and registers it under its name, once per name for the life of the
    /// process (the guard is leaked, as calls borrow it for `'static`): [`get`] returns it, and
    /// the run-time settings by name ([`settings`](crate::settings)) apply to it, these options
    /// being its defaults. If the name is taken (by a builder, a layer or a `#[too_busy]` fn that
    /// ran), returns the registered guard when its options are the same, and else an error naming
    /// the setting that differs.
    ///
    /// ```
    /// use resiliency::too_busy::{self, TooBusy};
    ///
    /// let guard = TooBusy::builder("checkout").max_in_flight(64).register().unwrap();
    /// let again = TooBusy::builder("checkout").max_in_flight(64).register().unwrap();
    /// assert!(std::ptr::eq(guard, again));
    /// assert_eq!(too_busy::get("checkout").unwrap().in_flight_limit(), Some(64));
    /// let other = TooBusy::builder("checkout").max_in_flight(8).register();
    /// assert_eq!(
    ///     other.unwrap_err().to_string(),
    ///     "too_busy `checkout`: `max_in_flight` = 8 from `register` differs from 64 from `register`"
    /// );
    /// ```
    pub fn register(self) -> Result<&'static TooBusy, ConfigError> {
        self.register_as(Origin::Builder)
    }

    /// [`register`](Self::register), the options coming from `origin`.
    pub(crate) fn register_as(self, origin: Origin) -> Result<&'static TooBusy, ConfigError> {
        self.check()?;
        REGISTRY.register(self.name, self.clone(), origin, |options| {
            let guard: &'static TooBusy = Box::leak(Box::new(TooBusy::new(self.name)));
            guard.apply(&options);
            crate::settings::attach(options, guard);
            Ok(guard)
        })
    }
}

/// The guard registered under `name`: by [`TooBusyBuilder::register`], a
/// [`TooBusyLayer`](crate::tower::TooBusyLayer), or the first call of a `#[too_busy]` fn of that
/// name (its `name = "..."`, or else its path, such as `my_app::api::search`); the first of these
/// to take a name keeps it, and the others use its guard. What code reads a guard's state from,
/// such as the limit `max_in_flight = "auto"` has learned (the facade's `#[too_busy]` docs show
/// one).
pub fn get(name: &str) -> Option<&'static TooBusy> {
    REGISTRY.get(name)
}

/// The guard of a `#[too_busy]` site called `name`, whose attribute gives the options
/// `configure` sets (called once, here): the one registered under that name (a difference of
/// options logged), or else the one the settings set up ([`set_up`](super::settings::set_up)),
/// registered now.
pub(crate) fn set_up(
    name: &'static str,
    configure: fn(TooBusyBuilder) -> TooBusyBuilder,
) -> &'static TooBusy {
    let attribute = configure(TooBusy::builder(name));
    REGISTRY.set_up(name, attribute.clone(), || {
        super::settings::set_up(name, attribute)
    })
}
