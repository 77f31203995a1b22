//! Time limits by name, in the one registry of named policies ([`crate::named`]): registered
//! from code ([`TimeoutBuilder::register`]), by a `tower` layer
//! ([`TimeoutLayer::new`](crate::tower::TimeoutLayer::new)) or by a `#[timeout]` fn's first
//! call. One time limit per name, whichever made it, with the run-time settings by name on it.
//! A name registered again with other options is refused (a builder, a layer) or logged (an
//! attribute's site, which uses the registered one).

use super::builder::TimeoutBuilder;
use super::timeout::Timeout;
use crate::named::{first_difference, Difference, Named, Origin};
use crate::options::{ByName as _, Options as _};
use crate::ConfigError;

static REGISTRY: Named<Timeout, TimeoutBuilder> = Named::new(differ);

/// The first setting in which two sets of options differ.
fn differ(a: &TimeoutBuilder, b: &TimeoutBuilder) -> Option<Difference> {
    first_difference(a, b, |options, setting| options.get(setting))
}

impl TimeoutBuilder {
    /// Builds the time limit and registers it under its name, once per name for the life of the
    /// process (it is leaked, as calls borrow it for `'static`): [`get`] returns it, and the
    /// run-time settings by name ([`settings`](crate::settings)) apply to it, these options being
    /// its defaults. If the name is taken (by a builder, a layer or a `#[timeout]` fn that ran),
    /// returns the registered one when its options are the same, and else an error naming the
    /// setting that differs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::timeout::{self, Timeout};
    ///
    /// let limit = Timeout::builder("catalog").total(Duration::from_secs(2)).register().unwrap();
    /// assert!(std::ptr::eq(limit, timeout::get("catalog").unwrap()));
    /// let other = Timeout::builder("catalog").total(Duration::from_secs(5)).register();
    /// assert_eq!(
    ///     other.unwrap_err().to_string(),
    ///     "timeout `catalog`: `total` = 5s from `register` differs from 2s from `register`"
    /// );
    /// ```
    pub fn register(self) -> Result<&'static Timeout, ConfigError> {
        self.register_as(Origin::Builder)
    }

    /// [`register`](Self::register), the options coming from `origin`.
    pub(crate) fn register_as(self, origin: Origin) -> Result<&'static Timeout, ConfigError> {
        self.check()?;
        REGISTRY.register(self.name, self.clone(), origin, |options| {
            let limit: &'static Timeout = Box::leak(Box::new(Timeout::new(self.name)));
            limit.apply(&options);
            crate::settings::attach(options, limit);
            Ok(limit)
        })
    }
}

/// The time limit registered under `name`: by [`TimeoutBuilder::register`], a
/// [`TimeoutLayer`](crate::tower::TimeoutLayer), or the first call of a `#[timeout]` fn of that
/// name (its `name = "..."`, or else its path, such as `my_app::api::search`).
pub fn get(name: &str) -> Option<&'static Timeout> {
    REGISTRY.get(name)
}

/// The time limit of a `#[timeout]` site called `name`, whose attribute gives the options
/// `configure` sets (called once, here): the one registered under that name (a difference of
/// options logged), or else the one the settings set up, registered now.
pub(crate) fn set_up(
    name: &'static str,
    configure: fn(TimeoutBuilder) -> TimeoutBuilder,
) -> &'static Timeout {
    let attribute = configure(Timeout::builder(name));
    REGISTRY.set_up(name, attribute.clone(), || {
        super::settings::set_up(name, attribute)
    })
}
