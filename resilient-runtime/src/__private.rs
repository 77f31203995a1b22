//! Support for the code that the attributes generate. Not a public API: anything here may change
//! in any release.

use std::fmt::{self, Display};
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::breaker::{self, Breaker, BreakerBuilder, KeyedBreaker};
use crate::Rejected;

/// The error type of an annotated function must be able to carry a [`Rejected`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a `resilient::Rejected`",
    label = "this error type needs `impl From<resilient::Rejected>`",
    note = "add `impl From<resilient::Rejected> for {Self}`, or return an error type that already has it, such as `Box<dyn std::error::Error + Send + Sync>` or `anyhow::Error`"
)]
pub trait FromRejected: From<Rejected> {}

impl<E: From<Rejected>> FromRejected for E {}

/// A key of `#[breaker(key = ...)]`: its text names its breaker.
#[diagnostic::on_unimplemented(
    message = "a breaker key must implement `Display`, and `{Self}` does not",
    label = "the key's text names its breaker",
    note = "use a value that implements `Display`, e.g. `key = host` for a `&str`, or `key = id.to_string()`"
)]
pub trait BreakerKey: Display {}

impl<K: Display + ?Sized> BreakerKey for K {}

/// Pins the output type of the body's future to the fn's return type, so that the compiler checks
/// a `count_if` predicate against the right error type.
#[inline(always)]
pub fn returns<R, F: Future<Output = R>>(body: F) -> F {
    body
}

/// The default name of a site: the path of the fn that holds `marker` (a fn item declared in its
/// body), e.g. `my_app::db::Pool::query`. Methods of different types thus get different names.
pub fn name_of<F>(marker: F) -> &'static str {
    let path = std::any::type_name_of_val(&marker);
    let path = path
        .rsplit_once("::")
        .map_or(path, |(fn_path, _marker)| fn_path);
    if path.contains("::{{closure}}") {
        Box::leak(path.replace("::{{closure}}", "").into_boxed_str())
    } else {
        path
    }
}

/// The breaker of one call site, with the `call` methods that generated code uses: the same as
/// [`Breaker::call`], with the error type's requirement spelled out for the compiler's message.
#[derive(Debug)]
pub struct Site<B>(B);

impl<B: Deref<Target = Breaker>> Site<B> {
    /// See [`Breaker::call`].
    #[inline]
    pub async fn call<T, E, F>(self, call: F) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        self.0.call(call).await
    }

    /// See [`Breaker::call_if`]. The body comes first, so that the compiler learns the error type
    /// from it before it checks the predicate.
    #[inline]
    pub async fn call_if<T, E, F, P>(self, call: F, counts: P) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: FnOnce(&E) -> bool,
    {
        self.0.call_if(counts, call).await
    }
}

/// A `#[breaker]` without `key`: one breaker per name, looked up once.
pub struct BreakerSite {
    name: fn() -> &'static str,
    configure: fn(BreakerBuilder) -> BreakerBuilder,
    breaker: OnceLock<Arc<Breaker>>,
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
    #[inline]
    pub fn breaker(&'static self) -> Site<&'static Breaker> {
        Site(self.breaker.get_or_init(|| {
            let name = (self.name)();
            let config = (self.configure)(Breaker::builder(name));
            config.clone().register().unwrap_or_else(|error| {
                tracing::warn!(target: "resilient::breaker", %error, "using an unregistered breaker");
                Arc::new(or_defaults(config.build(), || Breaker::builder(name).build()))
            })
        }))
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
    #[inline]
    pub fn breaker<K: BreakerKey + ?Sized>(&'static self, key: &K) -> Site<Arc<Breaker>> {
        Site(self.family
            .get_or_init(|| {
                let name = (self.name)();
                let config = (self.configure)(Breaker::builder(name));
                config.clone().register_keyed().unwrap_or_else(|error| {
                    tracing::warn!(target: "resilient::breaker", %error, "using an unregistered keyed breaker");
                    Arc::new(or_defaults(config.build_keyed(), || {
                        Breaker::builder(name).build_keyed()
                    }))
                })
            })
            .breaker(key))
    }
}

/// Options that `#[breaker]` validated cannot fail here; should they, log it and fall back to the
/// defaults rather than panic in the caller's request path.
fn or_defaults<T>(
    result: Result<T, breaker::ConfigError>,
    defaults: impl FnOnce() -> Result<T, breaker::ConfigError>,
) -> T {
    result.unwrap_or_else(|error| {
        tracing::error!(target: "resilient::breaker", %error, "invalid breaker options; using the defaults");
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
