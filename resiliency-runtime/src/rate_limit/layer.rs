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
use crate::tower::{BoxError, ErrInto};
use crate::{ConfigError, Rejected};

/// A [`Layer`] that limits the rate of a service's requests with the [`RateLimit`] registered
/// under the builder's name ([`RateLimitBuilder::register`]): the run-time settings by name
/// apply to it. A request over the limit gets a [`Rejected`](crate::Rejected) in a [`BoxError`]
/// without waiting, and never reaches the inner service; with `max_wait`, one whose permit frees
/// within it is passed on (its future made in `call`) and polled once its wait is over.
///
/// With [`key_by`](Self::key_by), each request's key (say, its client's address) has a limit of
/// its own, as `#[rate_limit(key = ...)]` gives ([`RateLimit::call_keyed`]).
///
/// ```
/// use resiliency::rate_limit::{Rate, RateLimit};
/// use resiliency::tower::RateLimitLayer;
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), resiliency::tower::BoxError> {
/// // (client, request): one request a second per client.
/// let layer = RateLimitLayer::new(RateLimit::builder("api-per-client").rate(Rate::per_second(1)))?
///     .key_by(|(client, _): &(&'static str, u32)| *client);
/// let mut svc = layer.layer(service_fn(|(_, n): (&str, u32)| async move { Ok::<_, std::io::Error>(n) }));
/// assert_eq!(svc.ready().await?.call(("alice", 1)).await?, 1);
/// assert!(svc.ready().await?.call(("alice", 2)).await.is_err());
/// assert_eq!(svc.ready().await?.call(("bob", 3)).await?, 3);
/// # Ok(())
/// # }
/// ```
#[derive(Copy, Clone)]
pub struct RateLimitLayer<K = Unkeyed> {
    limit: &'static RateLimit,
    key: K,
}

/// The layer's requests share one limit (the default).
#[derive(Copy, Clone, Debug, Default)]
pub struct Unkeyed;

/// Each request's key, as `F` gives it, has a limit of its own ([`RateLimitLayer::key_by`]).
#[derive(Copy, Clone)]
pub struct KeyBy<F>(F);

impl<F> fmt::Debug for KeyBy<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyBy")
    }
}

/// What picks a request's limit: none of its own ([`Unkeyed`]), or its key's ([`KeyBy`]).
pub trait PickKey<Req> {
    /// The hash of the request's key under `limit`, or `None` for the one limit.
    fn pick(&self, limit: &RateLimit, request: &Req) -> Option<u64>;
}

impl<Req> PickKey<Req> for Unkeyed {
    #[inline]
    fn pick(&self, _: &RateLimit, _: &Req) -> Option<u64> {
        None
    }
}

impl<Req, Key, F> PickKey<Req> for KeyBy<F>
where
    F: Fn(&Req) -> Key,
    Key: std::hash::Hash,
{
    #[inline]
    fn pick(&self, limit: &RateLimit, request: &Req) -> Option<u64> {
        Some(limit.hash_key(&(self.0)(request)))
    }
}

impl<K> fmt::Debug for RateLimitLayer<K> {
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
            key: Unkeyed,
        })
    }

    /// The layer of a rate limit (registered or not).
    pub fn from_rate_limit(limit: &'static RateLimit) -> Self {
        RateLimitLayer {
            limit,
            key: Unkeyed,
        }
    }

    /// A limit per key: `f` gives each request's key (any `Hash` value, such as its client's
    /// address); each key has the limit's rate and burst of its own, at most `max_keys` of them
    /// held.
    pub fn key_by<Req, Key, F>(self, f: F) -> RateLimitLayer<KeyBy<F>>
    where
        F: Fn(&Req) -> Key + Clone,
        Key: std::hash::Hash,
    {
        RateLimitLayer {
            limit: self.limit,
            key: KeyBy(f),
        }
    }
}

impl<K> RateLimitLayer<K> {
    /// The layer's rate limit.
    pub fn rate_limit(&self) -> &'static RateLimit {
        self.limit
    }
}

impl<S, K: Clone> Layer<S> for RateLimitLayer<K> {
    type Service = RateLimitService<S, K>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            limit: self.limit,
            key: self.key.clone(),
        }
    }
}

/// The service of a [`RateLimitLayer`].
#[derive(Clone)]
pub struct RateLimitService<S, K = Unkeyed> {
    inner: S,
    limit: &'static RateLimit,
    key: K,
}

impl<S: fmt::Debug, K> fmt::Debug for RateLimitService<S, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService")
            .field("inner", &self.inner)
            .field("limit", &self.limit.name())
            .finish()
    }
}

impl<S, K> RateLimitService<S, K> {
    /// The service's rate limit.
    pub fn rate_limit(&self) -> &'static RateLimit {
        self.limit
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, K, Req> Service<Req> for RateLimitService<S, K>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    K: PickKey<Req>,
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
        let key = self.key.pick(self.limit, &request);
        let admitted = RateLimitCall::admit_now(self.limit, key, BoxError::from, || {
            ErrInto::new(inner.call(request))
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
