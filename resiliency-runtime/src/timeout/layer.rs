//! [`TimeoutLayer`]: a registered [`Timeout`] around a service's calls.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::future::TimeoutCall;
use super::{Timeout, TimeoutBuilder};
use crate::tower::{BoxError, ErrInto};
use crate::ConfigError;

/// A [`Layer`] that bounds each call of a service with the [`Timeout`] registered under the
/// builder's name ([`TimeoutBuilder::register`]): the run-time settings by name apply to it. A
/// call past `total` has its response future dropped and gets a [`Rejected`](crate::Rejected)
/// in a [`BoxError`]. The response future reads its deadline with
/// [`resiliency::deadline`](crate::deadline), as a `#[timeout]` body does.
#[derive(Copy, Clone)]
pub struct TimeoutLayer {
    limit: &'static Timeout,
}

impl fmt::Debug for TimeoutLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutLayer")
            .field("limit", &self.limit.name())
            .finish()
    }
}

impl TimeoutLayer {
    /// The time limit registered under the builder's name (registered now with these options if
    /// the name is new), be it by a builder, another layer or a `#[timeout]` fn that ran.
    /// Options that break a rule are an error, as are options that differ from those the name
    /// was registered with.
    pub fn new(options: TimeoutBuilder) -> Result<Self, ConfigError> {
        Ok(TimeoutLayer {
            limit: options.register_as(crate::named::Origin::Layer)?,
        })
    }

    /// The layer of a time limit (registered or not).
    pub fn from_timeout(limit: &'static Timeout) -> Self {
        TimeoutLayer { limit }
    }

    /// The layer's time limit.
    pub fn timeout(&self) -> &'static Timeout {
        self.limit
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = TimeoutService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TimeoutService {
            inner,
            limit: self.limit,
        }
    }
}

/// The service of a [`TimeoutLayer`].
#[derive(Clone)]
pub struct TimeoutService<S> {
    inner: S,
    limit: &'static Timeout,
}

impl<S: fmt::Debug> fmt::Debug for TimeoutService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutService")
            .field("inner", &self.inner)
            .field("limit", &self.limit.name())
            .finish()
    }
}

impl<S> TimeoutService<S> {
    /// The service's time limit.
    pub fn timeout(&self) -> &'static Timeout {
        self.limit
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, Req> Service<Req> for TimeoutService<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = TimeoutFuture<S::Future>;

    /// The inner service's readiness: the time counts from `call`'s future's first poll.
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        TimeoutFuture {
            call: self.limit.call(ErrInto::new(self.inner.call(request))),
        }
    }
}

pin_project! {
    /// The response future of a [`TimeoutService`]: the inner service's future under the time
    /// limit.
    #[must_use = "futures do nothing unless polled"]
    pub struct TimeoutFuture<F> {
        #[pin]
        call: TimeoutCall<'static, ErrInto<F>, BoxError>,
    }
}

impl<F> fmt::Debug for TimeoutFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutFuture").finish_non_exhaustive()
    }
}

impl<F, Res, Err> Future for TimeoutFuture<F>
where
    F: Future<Output = Result<Res, Err>>,
    Err: Into<BoxError>,
{
    type Output = Result<Res, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().call.poll(cx)
    }
}
