//! Support for the code that the attributes generate. Not a public API: anything here may change
//! in any release.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::breaker::future::BreakerCall;
use crate::breaker::{Breaker, BreakerBuilder, BreakerKey, KeyedBreaker};
use crate::named::Origin;
use crate::too_busy::future::TooBusyCall;
use crate::too_busy::Refuse;

pub use crate::__resiliency_hint_reader as hint_reader;
pub use crate::fallback::{
    blocking_output, counts_for, counts_for_blocking, fallback_arg, on_error, on_error_fn, output,
    refusal_attempts, refusals, refusals_blocking, retry_if_for, BlockingOutput, Cause, Failure,
    FallbackArg, FallbackOutput, FallbackSite, Later, Now, RefusalAttempts, Refusals,
};
pub use crate::race_retry::numbered;
pub use crate::rejected::FromRejected;
pub use crate::retry_hint::{HintOf, NoHint, ReadsHint};
pub use resiliency_rules::{breaker_settings, race_retry_settings, too_busy_settings};

/// The type an attribute's `async move` body must produce: generated code names it in a `return`
/// that never runs (`if false { return body_returns::<R>(); }`), so that the body's own result is
/// checked against the fn's return type, with its coercions (`Ok(&self.name)` for
/// `Result<&str, E>`). Never called.
#[inline(always)]
pub fn body_returns<R>() -> R {
    unreachable!("`body_returns` sits behind `if false`")
}

pub use crate::breaker::future::{every_error, no_hint};

/// The error type of a fn's return type, named by generated code as `<R as IsResult>::Err`.
pub trait IsResult {
    /// The `E` of `Result<T, E>`.
    type Err;
}

impl<T, E> IsResult for Result<T, E> {
    type Err = E;
}

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
                match config.clone().register_static(Origin::Attribute) {
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
                config.clone().register_keyed_as(Origin::Attribute).unwrap_or_else(|error| {
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

pub use crate::too_busy::InFlight;
use crate::too_busy::{TooBusy, TooBusyBuilder};

/// A `#[too_busy]` site: its guard, set up on first use from the attribute's arguments
/// (`configure`, as builder calls), checked then by the builder's rules, with the run-time
/// settings on top. The guard is the one registered under the site's name: sites of one name (and
/// a guard registered from code or by a layer by that name) share it, the first set up giving its
/// options (a site whose own options differ logs the difference).
pub struct TooBusySite {
    name: fn() -> &'static str,
    configure: fn(TooBusyBuilder) -> TooBusyBuilder,
    /// The registry's guard, held for good: a call reaches it in one load.
    guard: OnceLock<&'static TooBusy>,
}

impl TooBusySite {
    /// A site whose guard is called `name()` and set up by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(TooBusyBuilder) -> TooBusyBuilder,
    ) -> Self {
        TooBusySite {
            name,
            configure,
            guard: OnceLock::new(),
        }
    }

    /// The site's guard.
    #[inline]
    pub fn guard(&'static self) -> BusySite {
        match self.guard.get() {
            Some(guard) => BusySite(guard),
            None => self.set_up(),
        }
    }

    /// Sets the guard up; its events are emitted once it is in place, so that a subscriber may
    /// call this site.
    #[cold]
    fn set_up(&'static self) -> BusySite {
        BusySite(crate::later::hold(|| {
            self.guard
                .get_or_init(|| crate::too_busy::set_up((self.name)(), self.configure))
        }))
    }
}

impl fmt::Debug for TooBusySite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TooBusySite")
            .field("name", &self.name)
            .field("guard", &self.guard.get())
            .finish_non_exhaustive()
    }
}

/// The guard of a `#[too_busy]` fn that returns a `Result`: like [`TooBusy::call`], with the error
/// type's requirement spelled out for the compiler's message (through [`Refuse`], an error type
/// without `From<Rejected>` would be reported as a bare `From` bound).
///
/// [`Refuse`]: crate::too_busy::Refuse
#[derive(Debug)]
pub struct BusySite(pub &'static TooBusy);

impl BusySite {
    /// `Ok` when the guard admits the call now holding nothing (the lag signal alone, the lag at
    /// most `max_lag`): its body then runs as it is, with nothing to give back or record when it
    /// ends. `Err` with the site otherwise, to call the body through [`call`](Self::call) or
    /// [`respond`](Self::respond), which ask at their first poll. For a call awaited as it is
    /// made (`#[too_busy]` on an `async fn`), where now is its first poll.
    #[inline(always)]
    pub fn admit_free(self) -> Result<(), Self> {
        if self.0.admits_freely() {
            Ok(())
        } else {
            Err(self)
        }
    }

    /// The call: [`TooBusy::call`].
    #[inline(always)]
    pub fn call<T, E, F>(self, body: F) -> TooBusyCall<F, Result<T, E>>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        self.0.call(body)
    }

    /// The call of a blocking fn: [`TooBusy::call_blocking`].
    #[inline(always)]
    pub fn call_blocking<T, E, F>(self, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
    {
        self.0.call_blocking(body)
    }

    /// The call of a fn that returns another type a call can be refused through (a response):
    /// [`TooBusy::call`], its bound on the fn's return type rather than on the body's future, so
    /// that the compiler reports it at the return type.
    #[inline(always)]
    pub fn respond<R, F>(self, body: F) -> TooBusyCall<F, R>
    where
        F: Future<Output = R>,
        R: Refuse,
    {
        self.0.call(body)
    }
}

use crate::race_retry::future::{Always, Hinted as RaceHinted, Race};
pub use crate::race_retry::{After, Backoff, Budget};
use crate::race_retry::{MakeAttempt, RaceRetry, RaceRetryBuilder};

/// The policy of `options` with no rule checked: values past the rules clamped as a policy
/// clamps whatever it holds (a `total` not given is zero). For the tests of the `race_retry`
/// guarantees on extreme settings; nothing else builds such a policy.
pub fn race_retry_unchecked(options: RaceRetryBuilder) -> RaceRetry {
    RaceRetry::unchecked(&options)
}

/// A `#[race_retry]` site: its policy, set up on first use from the attribute's arguments
/// (`configure`, as builder calls), checked then by the builder's rules, with the run-time
/// settings on top. The policy is the one registered under the site's name: sites of one name
/// (and a policy registered from code or by a layer by that name) share it, the first set up
/// giving its options (a site whose own options differ logs the difference).
pub struct RaceSite {
    name: fn() -> &'static str,
    configure: fn(RaceRetryBuilder) -> RaceRetryBuilder,
    /// The registry's policy, held for good: a call reaches it in one load.
    race: OnceLock<&'static RaceRetry>,
}

impl RaceSite {
    /// A site whose policy is called `name()` and set up by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(RaceRetryBuilder) -> RaceRetryBuilder,
    ) -> Self {
        RaceSite {
            name,
            configure,
            race: OnceLock::new(),
        }
    }

    /// The site's policy.
    #[inline]
    pub fn race(&'static self) -> RaceCall {
        RaceCall(match self.race.get() {
            Some(race) => race,
            None => self.set_up(),
        })
    }

    /// Sets the policy up; its events are emitted once it is in place, so that a subscriber may
    /// call this site.
    #[cold]
    fn set_up(&'static self) -> &'static RaceRetry {
        crate::later::hold(|| {
            self.race
                .get_or_init(|| crate::race_retry::set_up((self.name)(), self.configure))
        })
    }
}

/// The policy of a `#[race_retry]` site, with the calls generated code makes: those of
/// [`RaceRetry::run`] and [`RaceRetry::run_if`], with a reader of each error's
/// [`RetryHint`](crate::RetryHint) (`hint_reader!`). The attempts come first, so that the
/// compiler learns the error type from them before it reads a closure's parameter.
#[derive(Debug, Clone, Copy)]
pub struct RaceCall(pub &'static RaceRetry);

impl RaceCall {
    /// [`RaceRetry::run`], with each error's hint.
    #[inline(always)]
    pub fn run_with<M, Fut, T, E, H>(
        self,
        make: M,
        hint: H,
    ) -> Race<M, Fut, E, RaceHinted<Always, H>>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
        H: Fn(&E) -> Option<std::time::Duration>,
    {
        self.0.run_judged(make, RaceHinted::new(Always, hint))
    }

    /// [`RaceRetry::run_if`], with each error's hint.
    #[inline(always)]
    pub fn run_if_with<M, Fut, T, E, P, H>(
        self,
        make: M,
        retryable: P,
        hint: H,
    ) -> Race<M, Fut, E, RaceHinted<P, H>>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: Fn(&E) -> bool,
        H: Fn(&E) -> Option<std::time::Duration>,
    {
        self.0.run_judged(make, RaceHinted::new(retryable, hint))
    }
}

impl fmt::Debug for RaceSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaceSite")
            .field("name", &self.name)
            .field("race", &self.race.get())
            .finish_non_exhaustive()
    }
}

/// Each attempt's own copy of an argument: `&T` and `&self` are copied, owned values cloned.
#[diagnostic::on_unimplemented(
    message = "`#[race_retry]` gives every attempt its own copy of each argument, and `{Self}` cannot be cloned",
    label = "this argument is cloned for each attempt",
    note = "take it by reference (`&T`), share it in an `Arc`, or make it `Clone` (for a generic type, add a `Clone` bound)"
)]
pub trait AttemptArg: Clone {}

impl<T: Clone> AttemptArg for T {}

/// An attempt's copy of an argument.
#[inline(always)]
pub fn attempt_arg<T: AttemptArg>(value: &T) -> T {
    value.clone()
}

/// The body of a `#[too_busy]` handler that returns `impl IntoResponse`, as a `Response` through
/// which a refusal can be a 503.
#[cfg(feature = "axum")]
pub fn into_response<T: axum_core::response::IntoResponse>(
    value: T,
) -> axum_core::response::Response {
    value.into_response()
}

/// Without the `axum` feature, a handler returning `impl IntoResponse` cannot be guarded.
#[cfg(not(feature = "axum"))]
pub fn into_response<T: NeedsAxumFeature>(value: T) -> T {
    value
}

/// Without the `axum` feature, a handler returning `impl IntoResponse` cannot be guarded.
#[cfg(not(feature = "axum"))]
#[diagnostic::on_unimplemented(
    message = "`#[too_busy]` on a handler returning `impl Trait` needs the `axum` feature of `resiliency`",
    label = "refused calls become a 503 response only with the `axum` feature",
    note = "add `features = [\"axum\"]` to the `resiliency` dependency, or return `Result<T, E>` with `E: From<resiliency::Rejected>`"
)]
pub trait NeedsAxumFeature {}
