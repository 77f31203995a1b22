//! Rate limits by name, in the one registry of named policies ([`crate::named`]): registered
//! from code ([`RateLimitBuilder::register`]), by a `tower` layer
//! ([`RateLimitLayer::new`](crate::tower::RateLimitLayer::new)) or by a `#[rate_limit]` fn's first
//! call. One rate limit per name, whichever made it, with the run-time settings by name on it.
//! A name registered again with other options is refused (a builder, a layer) or logged (an
//! attribute's site, which uses the registered one).

use super::builder::RateLimitBuilder;
use super::rate_limit::RateLimit;
use crate::named::{first_difference, Difference, Named, Origin};
use crate::options::{ByName as _, Options as _};
use crate::ConfigError;

static REGISTRY: Named<RateLimit, RateLimitBuilder> = Named::new(differ);

/// The first setting in which two sets of options differ.
fn differ(a: &RateLimitBuilder, b: &RateLimitBuilder) -> Option<Difference> {
    first_difference(a, b, |options, setting| options.get(setting))
}

impl RateLimitBuilder {
    /// Builds the rate limit and registers it under its name, once per name for the life of the
    /// process (it is leaked, as calls borrow it for `'static`): [`get`] returns it, and the
    /// run-time settings by name ([`settings`](crate::settings)) apply to it, these options being
    /// its defaults. If the name is taken (by a builder, a layer or a `#[rate_limit]` fn that ran),
    /// returns the registered one when its options are the same, and else an error naming the
    /// setting that differs.
    ///
    /// ```
    /// use resiliency::rate_limit::{self, Rate, RateLimit};
    ///
    /// let limit = RateLimit::builder("partner-api").rate(Rate::per_second(50)).register().unwrap();
    /// assert!(std::ptr::eq(limit, rate_limit::get("partner-api").unwrap()));
    /// let other = RateLimit::builder("partner-api").rate(Rate::per_second(80)).register();
    /// assert_eq!(
    ///     other.unwrap_err().to_string(),
    ///     "rate_limit `partner-api`: `rate` = \"80/s\" from `register` differs from \"50/s\" from `register`"
    /// );
    /// ```
    pub fn register(self) -> Result<&'static RateLimit, ConfigError> {
        self.register_as(Origin::Builder)
    }

    /// [`register`](Self::register), the options coming from `origin`.
    pub(crate) fn register_as(self, origin: Origin) -> Result<&'static RateLimit, ConfigError> {
        self.check()?;
        REGISTRY.register(self.name, self.clone(), origin, |options| {
            let limit: &'static RateLimit = Box::leak(Box::new(RateLimit::new(self.name)));
            limit.apply(&options);
            crate::settings::attach(options, limit);
            Ok(limit)
        })
    }
}

/// The rate limit registered under `name`: by [`RateLimitBuilder::register`], a
/// [`RateLimitLayer`](crate::tower::RateLimitLayer), or the first call of a `#[rate_limit]` fn of that
/// name (its `name = "..."`, or else its path, such as `my_app::api::search`).
pub fn get(name: &str) -> Option<&'static RateLimit> {
    REGISTRY.get(name)
}

/// The rate limit of a `#[rate_limit]` site called `name`, whose attribute gives the options
/// `configure` sets (called once, here): the one registered under that name (a difference of
/// options logged), or else the one the settings set up, registered now.
pub(crate) fn set_up(
    name: &'static str,
    configure: fn(RateLimitBuilder) -> RateLimitBuilder,
) -> &'static RateLimit {
    let attribute = configure(RateLimit::builder(name));
    REGISTRY.set_up(name, attribute.clone(), || {
        super::settings::set_up(name, attribute)
    })
}
