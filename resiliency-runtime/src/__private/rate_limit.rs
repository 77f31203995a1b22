//! `#[rate_limit]`'s sites: a rate limit per name, set up at the first call, and the call its
//! expansion makes.

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;

use crate::rate_limit::future::RateLimitCall;
use crate::rate_limit::{RateLimit, RateLimitBuilder};
use crate::rejected::FromRejected;

/// A `#[rate_limit]` site: its rate limit, set up on first use from the attribute's arguments
/// (`configure`, as builder calls), with the run-time settings on top. It is the one registered
/// under the site's name: sites of one name (and a rate limit registered from code or by a layer
/// by that name) share it.
pub struct RateLimitSite {
    name: fn() -> &'static str,
    configure: fn(RateLimitBuilder) -> RateLimitBuilder,
    /// The registry's rate limit, held for good: a call reaches it in one load.
    limit: OnceLock<&'static RateLimit>,
}

impl RateLimitSite {
    /// A site whose rate limit is called `name()` and set up by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(RateLimitBuilder) -> RateLimitBuilder,
    ) -> Self {
        RateLimitSite {
            name,
            configure,
            limit: OnceLock::new(),
        }
    }

    /// The site's rate limit.
    #[inline]
    pub fn rate_limit(&'static self) -> RateSite {
        match self.limit.get() {
            Some(limit) => RateSite(limit, None),
            None => self.set_up(),
        }
    }

    /// Sets the rate limit up; its events are emitted once it is in place.
    #[cold]
    fn set_up(&'static self) -> RateSite {
        let limit = crate::later::hold(|| {
            self.limit
                .get_or_init(|| crate::rate_limit::set_up((self.name)(), self.configure))
        });
        RateSite(limit, None)
    }
}

impl fmt::Debug for RateLimitSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitSite")
            .field("limit", &self.limit.get())
            .finish_non_exhaustive()
    }
}

/// The rate limit of a `#[rate_limit]` fn, and the hash of the call's key (`key = ...`).
#[derive(Debug)]
pub struct RateSite(pub &'static RateLimit, Option<u64>);

impl RateSite {
    /// The call's key (`key = ...`), hashed now, before the body takes the arguments.
    #[inline(always)]
    pub fn keyed<K: std::hash::Hash + ?Sized>(self, key: &K) -> Self {
        RateSite(self.0, Some(self.0.hash_key(key)))
    }

    /// The call: [`RateLimit::call`] (or [`RateLimit::call_keyed`]).
    #[inline(always)]
    pub fn call<T, E, F>(self, body: F) -> RateLimitCall<'static, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        RateLimitCall::new(self.0, self.1, body)
    }

    /// The call of a blocking fn: [`RateLimit::call_blocking`] (or
    /// [`RateLimit::call_blocking_keyed`]).
    #[inline(always)]
    pub fn call_blocking<T, E, F>(self, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
    {
        self.0.blocking(self.1, body)
    }
}
