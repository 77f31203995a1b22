//! `#[breaker]`'s sites: a breaker (or a keyed family) per name, set up at the first call, and
//! the calls its expansion makes.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::breaker::call::{every_error, no_hint};
use crate::breaker::future::BreakerCall;
use crate::breaker::{Breaker, BreakerBuilder, BreakerKey, KeyedBreaker};
use crate::named::Origin;
use crate::rejected::FromRejected;

/// The breaker of one call site, with the `call` methods that generated code uses: those of
/// [`Breaker`], with the error type's requirement spelled out for the compiler's message. The
/// breaker decides at each call, from the settings in force, the rule and whether a timeout
/// applies.
#[derive(Debug)]
pub struct Site<B>(B);

impl<B: Deref<Target = Breaker>> Site<B> {
    /// The call: [`Breaker::call`].
    pub fn call<T, E, F>(self, body: F) -> BreakerCall<B, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        BreakerCall::new(self.0, body, every_error::<E>, no_hint::<E>)
    }

    /// The call with `count_if`: [`Breaker::call_if`]. The body comes first, so that the compiler
    /// learns the error type from it before it checks the predicate.
    pub fn call_if<T, E, F, P>(self, body: F, counts: P) -> BreakerCall<B, F, E, P>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: FnMut(&E) -> bool,
    {
        BreakerCall::new(self.0, body, counts, no_hint::<E>)
    }

    /// The call with its errors' hints: `counts` says whether an error counts (`every_error`
    /// without `count_if`), `hint` reads its [`RetryHint`](crate::RetryHint) (`hint_reader!`).
    /// The body comes first, so that the compiler learns the error type from it.
    #[inline(always)]
    pub fn call_with<T, E, F, P, H>(self, body: F, counts: P, hint: H) -> BreakerCall<B, F, E, P, H>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: FnMut(&E) -> bool,
        H: FnMut(&E) -> Option<std::time::Duration>,
    {
        BreakerCall::new(self.0, body, counts, hint)
    }

    /// [`call_with`](Self::call_with) for a blocking fn.
    #[inline(always)]
    pub fn call_blocking_with<T, E, F, P, H>(self, body: F, counts: P, hint: H) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
        P: FnMut(&E) -> bool,
        H: FnMut(&E) -> Option<std::time::Duration>,
    {
        crate::breaker::blocking::run(&self.0, counts, hint, body)
    }

    /// The call of a blocking fn: [`Breaker::call_blocking`] (`#[breaker]` refuses `timeout` on
    /// a blocking fn, and one added by a run-time setting does not apply).
    pub fn call_blocking<T, E, F>(self, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
    {
        self.0.call_blocking(body)
    }

    /// [`call_blocking`](Self::call_blocking) with `count_if`. The body comes first, so that the
    /// compiler learns the error type from it before it checks the predicate.
    pub fn call_blocking_if<T, E, F, P>(self, body: F, counts: P) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
        P: FnMut(&E) -> bool,
    {
        self.0.call_blocking_if(counts, body)
    }
}

/// A `#[breaker]` without `key`: one breaker per name, looked up once.
pub struct BreakerSite {
    name: fn() -> &'static str,
    configure: fn(BreakerBuilder) -> BreakerBuilder,
    /// The registry's breaker, held for good (a static site never lets it go): a reference, so
    /// that a call reaches it in one load.
    breaker: OnceLock<&'static Breaker>,
}

impl BreakerSite {
    /// A site whose breaker is called `name()` and built by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(BreakerBuilder) -> BreakerBuilder,
    ) -> Self {
        BreakerSite {
            name,
            configure,
            breaker: OnceLock::new(),
        }
    }

    /// The site's breaker: the registered one of that name, registered now if absent.
    // `#[inline]`: called from the user's crate on every call; out of line, 3 more instructions
    // per call (breaker benchmark, callgrind).
    #[inline]
    pub fn breaker(&'static self) -> Site<&'static Breaker> {
        Site(match self.breaker.get() {
            Some(breaker) => breaker,
            None => self.set_up(),
        })
    }

    /// Sets the breaker up; its events are emitted once it is in place, so that a subscriber
    /// may call this site.
    #[cold]
    fn set_up(&'static self) -> &'static Breaker {
        crate::later::hold(|| {
            self.breaker.get_or_init(|| {
                let name = (self.name)();
                let config = crate::settings::usable((self.configure)(Breaker::builder(name)))
                    .unwrap_or_else(|| Breaker::builder(name));
                match config.clone().register_config(config.config(), Origin::Attribute) {
                    Ok(registered) => &**registered,
                    Err(error) => {
                        crate::later::emit(move || tracing::warn!(target: "resiliency::breaker", %error, "using an unregistered breaker"));
                        let own = Arc::new(or_defaults(config.build(), || Breaker::builder(name).build()));
                        &**Box::leak(Box::new(own))
                    }
                }
            })
        })
    }
}

/// A `#[breaker(key = ...)]`: one keyed family per name, one breaker per key.
pub struct KeyedSite {
    name: fn() -> &'static str,
    configure: fn(BreakerBuilder) -> BreakerBuilder,
    family: OnceLock<Arc<KeyedBreaker>>,
}

impl KeyedSite {
    /// A site whose family is called `name()` and built by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(BreakerBuilder) -> BreakerBuilder,
    ) -> Self {
        KeyedSite {
            name,
            configure,
            family: OnceLock::new(),
        }
    }

    /// The breaker for `key`.
    pub fn breaker<K: BreakerKey + ?Sized>(&'static self, key: &K) -> Site<Arc<Breaker>> {
        let family = match self.family.get() {
            Some(family) => family,
            None => self.set_up(),
        };
        Site(family.breaker(key))
    }

    /// Sets the family up; its events are emitted once it is in place, so that a subscriber
    /// may call this site.
    #[cold]
    fn set_up(&'static self) -> &'static Arc<KeyedBreaker> {
        crate::later::hold(|| {
            self.family.get_or_init(|| {
                let name = (self.name)();
                let config = crate::settings::usable((self.configure)(Breaker::builder(name)))
                    .unwrap_or_else(|| Breaker::builder(name));
                config.clone().register_keyed_config(config.config(), Origin::Attribute).unwrap_or_else(|error| {
                    crate::later::emit(move || tracing::warn!(target: "resiliency::breaker", %error, "using an unregistered keyed breaker"));
                    Arc::new(or_defaults(config.build_keyed(), || {
                        Breaker::builder(name).build_keyed()
                    }))
                })
            })
        })
    }
}

/// Options that `#[breaker]` validated cannot fail here; should they, log it and fall back to the
/// defaults rather than panic in the caller's request path.
fn or_defaults<T>(
    result: Result<T, crate::ConfigError>,
    defaults: impl FnOnce() -> Result<T, crate::ConfigError>,
) -> T {
    result.unwrap_or_else(|error| {
        crate::later::emit(move || tracing::error!(target: "resiliency::breaker", %error, "invalid breaker options; using the defaults"));
        defaults().expect("the default options are valid")
    })
}

impl fmt::Debug for BreakerSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerSite")
            .field("name", &self.name)
            .finish()
    }
}

impl fmt::Debug for KeyedSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedSite")
            .field("name", &self.name)
            .finish()
    }
}
