//! Raced policies by name, in the one registry of named policies ([`crate::named`]): registered
//! from code ([`RaceRetryBuilder::register`]), by a `tower` layer
//! ([`RaceRetryLayer::new`](crate::tower::RaceRetryLayer::new)) or by a `#[race_retry]` fn's
//! first call. One policy per name, whichever made it, with the run-time settings by name on
//! it: [`get`], [`names`] and [`stats`] read it. A name registered again with other options is
//! refused (a builder, a layer) or logged (an attribute's site, which uses the registered policy).

use super::builder::RaceRetryBuilder;
use super::race_retry::RaceRetry;
use super::stats::RaceRetryStats;
use crate::named::{first_difference, Difference, Named, Origin};
use crate::options::{ByName as _, Options as _};
use crate::ConfigError;

static REGISTRY: Named<RaceRetry, RaceRetryBuilder> = Named::new(differ);

/// The first setting in which two sets of options differ, a setting not given read as its
/// default where it has a fixed one.
fn differ(a: &RaceRetryBuilder, b: &RaceRetryBuilder) -> Option<Difference> {
    let in_force = |builder: &RaceRetryBuilder| RaceRetryBuilder {
        options: builder.options.or_defaults(),
        ..builder.clone()
    };
    first_difference(&in_force(a), &in_force(b), |options, setting| {
        options.get(setting)
    })
}

impl RaceRetryBuilder {
    /// Builds the policy and registers it under its name, once per name for the life of the
    /// process (the policy is leaked, as calls borrow it for `'static`): [`get`] returns it, and
    /// the run-time settings by name ([`settings`](crate::settings)) apply to it, these options
    /// being its defaults. If the name is taken (by a builder, a layer or a `#[race_retry]` fn
    /// that ran), returns the registered policy when its options are the same, and else an error
    /// naming the setting that differs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::race_retry::{self, RaceRetry};
    ///
    /// let policy = RaceRetry::builder("search").total(Duration::from_millis(300)).register().unwrap();
    /// assert!(std::ptr::eq(policy, race_retry::get("search").unwrap()));
    /// let again = RaceRetry::builder("search").total(Duration::from_secs(1)).register();
    /// assert_eq!(
    ///     again.unwrap_err().to_string(),
    ///     "race_retry `search`: `total` = 1s from `register` differs from 300ms from `register`"
    /// );
    /// ```
    pub fn register(self) -> Result<&'static RaceRetry, ConfigError> {
        self.register_as(Origin::Builder)
    }

    /// [`register`](Self::register), the options coming from `origin`.
    pub(crate) fn register_as(self, origin: Origin) -> Result<&'static RaceRetry, ConfigError> {
        // Checked first, registered or not: invalid options are an error wherever they are given.
        self.check()?;
        REGISTRY.register(self.name, self.clone(), origin, |options| {
            // Checked above: built with no second check.
            let policy: &'static RaceRetry = Box::leak(Box::new(RaceRetry::new(self.name)));
            policy.apply(&options);
            crate::settings::attach(options, policy);
            Ok(policy)
        })
    }
}

/// The policy registered under `name`: by [`RaceRetryBuilder::register`], a
/// [`RaceRetryLayer`](crate::tower::RaceRetryLayer), or the first call of a `#[race_retry]` fn
/// of that name (its `name = "..."`, or else its path, such as `my_app::db::lookup`); the first
/// of these to take a name keeps it, and the others use its policy.
pub fn get(name: &str) -> Option<&'static RaceRetry> {
    REGISTRY.get(name)
}

/// The stats of the policy registered under `name` (see [`get`]), such as a `#[race_retry]` fn
/// that has been called (by its path, e.g. `my_app::db::lookup`, or its `name = "..."`).
pub fn stats(name: &str) -> Option<RaceRetryStats> {
    get(name).map(RaceRetry::stats)
}

/// The names of the registered policies (see [`get`]), sorted: the `#[race_retry]` fns called
/// so far and the policies registered from code or by a layer.
pub fn names() -> Vec<&'static str> {
    REGISTRY.names()
}

/// The policy of a `#[race_retry]` site called `name`, whose attribute gives the options
/// `configure` sets (called once, here): the one registered under that name (a difference of
/// options logged), or else the one the settings set up ([`set_up`](super::settings::set_up)),
/// registered now.
pub(crate) fn set_up(
    name: &'static str,
    configure: fn(RaceRetryBuilder) -> RaceRetryBuilder,
) -> &'static RaceRetry {
    let attribute = configure(RaceRetry::builder(name));
    REGISTRY.set_up(name, attribute.clone(), || {
        super::settings::set_up(name, attribute)
    })
}
