//! [`RateLimitLayer`]: a registered [`RateLimit`] at a service's entry.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::future::RateLimitCall;
use super::{RateLimit, RateLimitBuilder};
use crate::tower::BoxError;
use crate::{ConfigError, Rejected};

/// A [`Layer`] that limits the rate of a service's requests with the [`RateLimit`] registered
/// under the builder's name ([`RateLimitBuilder::register`]): the run-time settings by name
/// apply to it. A request over the limit gets a [`Rejected`](crate::Rejected) in a [`BoxError`]
/// without waiting, and never reaches the inner service; with `max_wait`, one whose permit frees
/// within it is passed on (its future made in `call`) and polled once its wait is over.
#[derive(Copy, Clone)]
pub struct RateLimitLayer {
    limit: &'static RateLimit,
}

impl fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("limit", &self.limit.name())
            .finish()
    }
}

impl RateLimitLayer {
    /// The rate limit registered under the builder's name (registered now with these options if
    /// the name is new), be it by a builder, another layer or a `#[rate_limit]` fn that ran: one limit,
    /// its settings, state and metrics. Options that break a rule are an error, as are options
    /// that differ from those the name was registered with (the error names the setting, both
    /// values and where each comes from).
    pub fn new(options: RateLimitBuilder) -> Result<Self, ConfigError> {
        Ok(RateLimitLayer {
            limit: options.register_as(crate::named::Origin::Layer)?,
        })
    }

    /// The layer of a rate limit (registered or not).
    pub fn from_rate_limit(limit: &'static RateLimit) -> Self {
        RateLimitLayer { limit }
    }

    /// The layer's rate limit.
    pub fn rate_limit(&self) -> &'static RateLimit {
        self.limit
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            limit: self.limit,
        }
    }
}

/// The service of a [`RateLimitLayer`].
#[derive(Clone)]
pub struct RateLimitService<S> {
    inner: S,
    limit: &'static RateLimit,
}

impl<S: fmt::Debug> fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService")
            .field("inner", &self.inner)
            .field("limit", &self.limit.name())
            .finish()
    }
}

impl<S> RateLimitService<S> {
    /// The service's rate limit.
    pub fn rate_limit(&self) -> &'static RateLimit {
        self.limit
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, Req> Service<Req> for RateLimitService<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = RateLimitFuture<S::Future>;

    /// The inner service's readiness: the rate limit refuses in `call`, at once.
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let inner = &mut self.inner;
        let admitted = RateLimitCall::admit_now(self.limit, BoxError::from, || ErrInto {
            inner: inner.call(request),
        });
        RateLimitFuture {
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
    /// The inner service's future, its error boxed.
    struct ErrInto<F> {
        #[pin]
        inner: F,
    }
}

impl<F, Res, Err> Future for ErrInto<F>
where
    F: Future<Output = Result<Res, Err>>,
    Err: Into<BoxError>,
{
    type Output = Result<Res, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx).map_err(Into::into)
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Admitted {
            #[pin]
            call: RateLimitCall<'static, ErrInto<F>, BoxError>,
        },
        Refused {
            rejected: Option<Rejected>,
        },
    }
}

pin_project! {
    /// The response future of a [`RateLimitService`]: a request the rate limit admitted when it
    /// was made (at once, or after its wait), or the refusal, ready at once; a refused request
    /// never reaches the inner service.
    #[must_use = "futures do nothing unless polled"]
    pub struct RateLimitFuture<F> {
        #[pin]
        state: State<F>,
    }
}

impl<F> fmt::Debug for RateLimitFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let refused = matches!(self.state, State::Refused { .. });
        f.debug_struct("RateLimitFuture")
            .field("refused", &refused)
            .finish_non_exhaustive()
    }
}

impl<F, Res, Err> Future for RateLimitFuture<F>
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
                    "a rate_limit layer's response future was polled after it completed",
                ))))
            }
        }
    }
}
