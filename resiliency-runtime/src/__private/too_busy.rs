//! `#[too_busy]`'s sites: a guard per name, set up at the first call, and the calls its
//! expansion makes.

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;

use crate::rejected::FromRejected;
use crate::too_busy::future::TooBusyCall;
use crate::too_busy::{Refuse, TooBusy, TooBusyBuilder};

pub use crate::too_busy::InFlight;

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
