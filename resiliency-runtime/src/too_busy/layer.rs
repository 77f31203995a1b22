//! [`TooBusyLayer`]: a registered [`TooBusy`] guard at a service's entry.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::future::TooBusyCall;
use super::{TooBusy, TooBusyBuilder};
use crate::tower::{BoxError, ErrInto};
use crate::{ConfigError, Rejected};

/// A [`Layer`] that sheds load at a service's entry with the [`TooBusy`] guard registered under
/// the builder's name ([`TooBusyBuilder::register`]): the run-time settings by name apply to it.
/// A refused request gets a [`Rejected`](crate::Rejected) in a [`BoxError`] without waiting.
/// With [`TooBusyBuilder::max_in_flight_auto`], the in-flight limit is learned from the latency
/// of the responses and their errors, as `#[too_busy(max_in_flight = "auto")]` learns it.
#[derive(Copy, Clone)]
pub struct TooBusyLayer {
    guard: &'static TooBusy,
}

impl fmt::Debug for TooBusyLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TooBusyLayer")
            .field("guard", &self.guard.name())
            .finish()
    }
}

impl TooBusyLayer {
    /// The guard registered under the builder's name (registered now with these options if the
    /// name is new), be it by a builder, another layer or a `#[too_busy]` fn that ran: one guard,
    /// its settings, state and metrics. Options that break a rule are an error, as are options
    /// that differ from those the name was registered with (the error names the setting, both
    /// values and where each comes from).
    pub fn new(options: TooBusyBuilder) -> Result<Self, ConfigError> {
        Ok(TooBusyLayer {
            guard: options.register_as(crate::named::Origin::Layer)?,
        })
    }

    /// The layer of a guard (registered or not).
    pub fn from_guard(guard: &'static TooBusy) -> Self {
        TooBusyLayer { guard }
    }

    /// The layer's guard.
    pub fn guard(&self) -> &'static TooBusy {
        self.guard
    }
}

impl<S> Layer<S> for TooBusyLayer {
    type Service = TooBusyService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TooBusyService {
            inner,
            guard: self.guard,
        }
    }
}

/// The service of a [`TooBusyLayer`].
#[derive(Clone)]
pub struct TooBusyService<S> {
    inner: S,
    guard: &'static TooBusy,
}

impl<S: fmt::Debug> fmt::Debug for TooBusyService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TooBusyService")
            .field("inner", &self.inner)
            .field("guard", &self.guard.name())
            .finish()
    }
}

impl<S> TooBusyService<S> {
    /// The service's guard.
    pub fn guard(&self) -> &'static TooBusy {
        self.guard
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, Req> Service<Req> for TooBusyService<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = TooBusyFuture<S::Future, S::Response>;

    /// The inner service's readiness: the guard refuses in `call`, at once.
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let inner = &mut self.inner;
        let admitted = self.guard.admit_now(|| ErrInto::new(inner.call(request)));
        TooBusyFuture {
            state: match admitted {
                Ok(call) => State::Admitted { call },
                Err(rejected) => State::Refused {
                    rejected: Some(rejected),
                },
            },
        }
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, Res> {
        Admitted {
            #[pin]
            call: TooBusyCall<ErrInto<F>, Result<Res, BoxError>>,
        },
        Refused {
            rejected: Option<Rejected>,
        },
    }
}

pin_project! {
    /// The response future of a [`TooBusyService`]: a call the guard admitted when it was made
    /// (it gives its slot back when it completes or is dropped), or the refusal, ready at once;
    /// a refused request never reaches the inner service.
    #[must_use = "futures do nothing unless polled"]
    pub struct TooBusyFuture<F, Res> {
        #[pin]
        state: State<F, Res>,
    }
}

impl<F, Res> fmt::Debug for TooBusyFuture<F, Res> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let refused = matches!(self.state, State::Refused { .. });
        f.debug_struct("TooBusyFuture")
            .field("refused", &refused)
            .finish_non_exhaustive()
    }
}

impl<F, Res, Err> Future for TooBusyFuture<F, Res>
where
    F: Future<Output = Result<Res, Err>>,
    Err: Into<BoxError>,
{
    type Output = Result<Res, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted { call } => call.poll(cx),
            StateProj::Refused { rejected } => {
                // Yields first when the task's cooperative budget is spent, as for the attributes.
                std::task::ready!(crate::rejected::poll_refusal(cx));
                Poll::Ready(Err(Box::new(rejected.take().expect(
                    "a too_busy layer's response future was polled after it completed",
                ))))
            }
        }
    }
}
