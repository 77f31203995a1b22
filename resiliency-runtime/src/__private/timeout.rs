//! `#[timeout]`'s sites: a time limit per name, set up at the first call, and the call its
//! expansion makes.

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;

use crate::rejected::FromRejected;
use crate::timeout::future::TimeoutCall;
use crate::timeout::{Timeout, TimeoutBuilder};

/// A `#[timeout]` site: its time limit, set up on first use from the attribute's arguments
/// (`configure`, as builder calls), with the run-time settings on top. It is the one registered
/// under the site's name: sites of one name (and a time limit registered from code or by a layer
/// by that name) share it.
pub struct TimeoutSite {
    name: fn() -> &'static str,
    configure: fn(TimeoutBuilder) -> TimeoutBuilder,
    /// The registry's time limit, held for good: a call reaches it in one load.
    limit: OnceLock<&'static Timeout>,
}

impl TimeoutSite {
    /// A site whose time limit is called `name()` and set up by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(TimeoutBuilder) -> TimeoutBuilder,
    ) -> Self {
        TimeoutSite {
            name,
            configure,
            limit: OnceLock::new(),
        }
    }

    /// The site's time limit.
    #[inline]
    pub fn timeout(&'static self) -> LimitSite {
        match self.limit.get() {
            Some(limit) => LimitSite(limit),
            None => self.set_up(),
        }
    }

    /// Sets the time limit up; its events are emitted once it is in place.
    #[cold]
    fn set_up(&'static self) -> LimitSite {
        LimitSite(crate::later::hold(|| {
            self.limit
                .get_or_init(|| crate::timeout::set_up((self.name)(), self.configure))
        }))
    }
}

impl fmt::Debug for TimeoutSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutSite")
            .field("limit", &self.limit.get())
            .finish_non_exhaustive()
    }
}

/// The time limit of a `#[timeout]` fn.
#[derive(Debug)]
pub struct LimitSite(pub &'static Timeout);

impl LimitSite {
    /// The call: [`Timeout::call`].
    #[inline(always)]
    pub fn call<T, E, F>(self, body: F) -> TimeoutCall<'static, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        self.0.call(body)
    }
}
