//! [`RaceRetryLayer`]: raced attempts of a request under one deadline, by a registered
//! [`RaceRetry`] policy.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::future::{Always, Race};
use super::retryable::Retryable;
use super::{MakeAttempt, RaceRetry, RaceRetryBuilder};
use crate::fallback::Failure;
use crate::tower::BoxError;
use crate::ConfigError;

// The bounds of `RaceRetryService`'s `Service` impl, private: `Clone` under other names, which
// exist for the compiler's messages when a request or a service is not `Clone`. Users meet them
// only in those messages, and satisfy them with `Clone`.

/// Each attempt's own copy of the request: implemented by every `Clone` type.
#[diagnostic::on_unimplemented(
    message = "the race layer sends each attempt its own copy of the request: `{Self}` must be Clone",
    label = "each attempt gets a clone of this request",
    note = "for `http::Request<B>`, use a body that is `Clone` (`String`, `Bytes`, `Full<Bytes>`, `Empty<Bytes>`), or buffer the body and rebuild the request in a `map_request` layer"
)]
pub(crate) trait AttemptRequest: Clone {}

// Not recommended: the compiler then reports `AttemptRequest`, with its message, rather than
// the `Clone` bound behind it.
#[diagnostic::do_not_recommend]
impl<T: Clone> AttemptRequest for T {}

/// Each attempt's own copy of the service: implemented by every `Clone` type.
#[diagnostic::on_unimplemented(
    message = "the race layer gives each attempt its own copy of the service: `{Self}` must be Clone",
    label = "each attempt clones this service, waits for it to be ready and calls it",
    note = "a hyper-util `Client` and `tower::service_fn` of a `Clone` closure are `Clone`; wrap another service in `tower::buffer::Buffer` to share it"
)]
pub(crate) trait AttemptService: Clone {}

#[diagnostic::do_not_recommend]
impl<T: Clone> AttemptService for T {}

/// Which errors are worth another attempt: every one ([`Always`], the default), or those for
/// which the closure of [`RaceRetryLayer::retry_if`] is true.
#[derive(Copy, Clone)]
pub struct RetryIf<F>(F);

impl<F> fmt::Debug for RetryIf<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RetryIf")
    }
}

/// A [`Layer`] that races attempts of each request under one deadline, by the [`RaceRetry`]
/// policy registered under the builder's name ([`RaceRetryBuilder::register`]): the run-time
/// settings by name apply to it, and its stats are [`race_retry::stats`](crate::race_retry::stats).
///
/// Each attempt clones the request and the inner service, waits for that service to be ready and
/// calls it (attempt 1 uses the service that `poll_ready` readied). Past `total`, the call
/// returns a [`Rejected`](crate::Rejected) ([`is_deadline`](crate::Rejected::is_deadline)) in a [`BoxError`].
///
/// **Retry-After is not read.** The layer asks no error or response for its
/// [`RetryHint`](crate::RetryHint): after an attempt's error that asks for a wait (an inner
/// `BreakerLayer`'s refusal, which carries the time until that breaker half-opens, or an error
/// type of your own that implements `RetryHint`), the next attempt starts on the usual schedule
/// (`after`, or the backoff after a failure). A response is an `Ok`, which wins the race: a 503 or
/// 429 with a `Retry-After` header goes to the caller, and no attempt follows it. `#[race_retry]`
/// and [`RaceRetry::run_hinted`] do wait as an error's hint asks; over a breaker layer, leave its
/// refusals out of [`retry_if`](Self::retry_if) (see the [module](super#raced-retries)).
#[derive(Copy, Clone)]
pub struct RaceRetryLayer<P = Always> {
    policy: &'static RaceRetry,
    retry_if: P,
}

impl<P> fmt::Debug for RaceRetryLayer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaceRetryLayer")
            .field("policy", &self.policy.name())
            .finish_non_exhaustive()
    }
}

impl RaceRetryLayer {
    /// The policy registered under the builder's name (registered now with these options if the
    /// name is new), be it by a builder, another layer or a `#[race_retry]` fn that ran: one
    /// policy, its settings, stats and metrics. Options that break a rule are an error, as are
    /// options that differ from those the name was registered with (the error names the setting,
    /// both values and where each comes from).
    pub fn new(options: RaceRetryBuilder) -> Result<Self, ConfigError> {
        Ok(RaceRetryLayer {
            policy: options.register_as(crate::named::Origin::Layer)?,
            retry_if: Always,
        })
    }

    /// The layer of a policy (registered or not).
    pub fn from_policy(policy: &'static RaceRetry) -> Self {
        RaceRetryLayer {
            policy,
            retry_if: Always,
        }
    }
}

impl<P> RaceRetryLayer<P> {
    /// Only errors for which `f` is true are worth another attempt: another error ends the call
    /// with it, the other attempts cancelled ([`RaceRetry::run_if`]). `f` sees the inner
    /// service's own error.
    pub fn retry_if<E, F>(self, f: F) -> RaceRetryLayer<RetryIf<F>>
    where
        F: Fn(&E) -> bool + Clone,
    {
        RaceRetryLayer {
            policy: self.policy,
            retry_if: RetryIf(f),
        }
    }

    /// The layer's policy.
    pub fn policy(&self) -> &'static RaceRetry {
        self.policy
    }
}

impl<S, P: Clone> Layer<S> for RaceRetryLayer<P> {
    type Service = RaceRetryService<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        RaceRetryService {
            inner,
            policy: self.policy,
            retry_if: self.retry_if.clone(),
        }
    }
}

/// The service of a [`RaceRetryLayer`].
#[derive(Clone)]
pub struct RaceRetryService<S, P = Always> {
    inner: S,
    policy: &'static RaceRetry,
    retry_if: P,
}

impl<S: fmt::Debug, P> fmt::Debug for RaceRetryService<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaceRetryService")
            .field("inner", &self.inner)
            .field("policy", &self.policy.name())
            .finish_non_exhaustive()
    }
}

impl<S, P> RaceRetryService<S, P> {
    /// The service's policy.
    pub fn policy(&self) -> &'static RaceRetry {
        self.policy
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    fn race<Req, Q>(&mut self, request: Req, retry_if: Q) -> RaceFuture<S, Req, Q>
    where
        S: Service<Req> + Clone,
        Req: Clone,
    {
        // Attempt 1 takes the service `poll_ready` readied; a fresh clone stays for the next call.
        let fresh = self.inner.clone();
        let readied = std::mem::replace(&mut self.inner, fresh);
        RaceFuture {
            race: self.policy.race_with(
                Launch {
                    first: Some(readied),
                    service: self.inner.clone(),
                    request,
                },
                Judged(retry_if),
            ),
        }
    }
}

// The bounds name private traits on purpose (see `AttemptRequest`).
#[allow(private_bounds)]
impl<S, Req, P> Service<Req> for RaceRetryService<S, P>
where
    S: Service<Req> + AttemptService,
    S::Error: Into<BoxError>,
    Req: AttemptRequest,
    P: RetryWith<S::Error>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = RaceFuture<S, Req, P>;

    /// The inner service's readiness (for attempt 1; later attempts wait for their own clone's).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let retry_if = self.retry_if.clone();
        self.race(request, retry_if)
    }
}

mod sealed {
    /// Keeps [`RetryWith`](super::RetryWith) to [`Always`](super::Always) and
    /// [`RetryIf`](super::RetryIf).
    pub trait Sealed {}
}

impl sealed::Sealed for Always {}
impl<F> sealed::Sealed for RetryIf<F> {}

/// Whether an inner service's error `E` is worth another attempt: [`Always`] (every error, the
/// default) or [`RetryIf`] ([`RaceRetryLayer::retry_if`]). Sealed.
pub trait RetryWith<E>: sealed::Sealed + Clone {
    /// True when another attempt may succeed where this one failed with `error`.
    fn worth_another(&self, error: &E) -> bool;
}

impl<E> RetryWith<E> for Always {
    #[inline(always)]
    fn worth_another(&self, _: &E) -> bool {
        true
    }
}

impl<E, F: Fn(&E) -> bool + Clone> RetryWith<E> for RetryIf<F> {
    #[inline]
    fn worth_another(&self, error: &E) -> bool {
        (self.0)(error)
    }
}

/// A [`RetryWith`] as the race asks it.
pub(crate) struct Judged<P>(P);

impl<E, P: RetryWith<E>> Retryable<Failure<E>> for Judged<P> {
    #[inline]
    fn retryable(&self, error: &Failure<E>) -> bool {
        match error {
            Failure::Error(error) => self.0.worth_another(error),
            Failure::Refused(_) => false,
        }
    }
}

impl RaceRetry {
    fn race_with<M, Fut, E, P>(&'static self, make: M, retry_if: P) -> Race<M, Fut, E, P> {
        Race::new(self, make, retry_if)
    }
}

/// Makes the attempts of one request.
struct Launch<S, Req> {
    first: Option<S>,
    service: S,
    request: Req,
}

impl<S, Req> MakeAttempt<AttemptFuture<S, Req>> for Launch<S, Req>
where
    S: Service<Req> + Clone,
    Req: Clone,
{
    fn make(&mut self, _attempt: u32) -> AttemptFuture<S, Req> {
        let service = self.first.take().unwrap_or_else(|| self.service.clone());
        AttemptFuture {
            state: Attempt::Ready {
                service,
                request: Some(self.request.clone()),
            },
        }
    }
}

pin_project! {
    #[project = AttemptProj]
    enum Attempt<S, Req>
    where
        S: Service<Req>,
    {
        Ready {
            service: S,
            request: Option<Req>,
        },
        Calling {
            #[pin]
            future: S::Future,
        },
    }
}

pin_project! {
    /// One attempt: its service made ready, then called.
    struct AttemptFuture<S, Req>
    where
        S: Service<Req>,
    {
        #[pin]
        state: Attempt<S, Req>,
    }
}

impl<S: Service<Req>, Req> Future for AttemptFuture<S, Req> {
    type Output = Result<S::Response, Failure<S::Error>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let future = match state.as_mut().project() {
                AttemptProj::Ready { service, request } => {
                    if let Err(error) = std::task::ready!(service.poll_ready(cx)) {
                        return Poll::Ready(Err(Failure::Error(error)));
                    }
                    let request = request.take().expect("an attempt is called once");
                    service.call(request)
                }
                AttemptProj::Calling { future } => {
                    return future.poll(cx).map_err(Failure::Error);
                }
            };
            state.set(Attempt::Calling { future });
        }
    }
}

pin_project! {
    /// The response future of a [`RaceRetryService`]: the first attempt's response, the error
    /// that ended the call (boxed), or past the deadline a [`Rejected`] in a [`BoxError`].
    #[must_use = "futures do nothing unless polled"]
    pub struct RaceFuture<S, Req, P>
    where
        S: Service<Req>,
    {
        #[pin]
        race: Race<Launch<S, Req>, AttemptFuture<S, Req>, Failure<S::Error>, Judged<P>>,
    }
}

impl<S: Service<Req>, Req, P> fmt::Debug for RaceFuture<S, Req, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaceFuture")
            .field("race", &self.race)
            .finish()
    }
}

impl<S, Req, P> Future for RaceFuture<S, Req, P>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    Req: Clone,
    P: RetryWith<S::Error>,
{
    type Output = Result<S::Response, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match std::task::ready!(self.project().race.poll(cx)) {
            Ok(response) => Ok(response),
            Err(Failure::Error(error)) => Err(error.into()),
            Err(Failure::Refused(rejected)) => Err(Box::new(rejected)),
        })
    }
}
