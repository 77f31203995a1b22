//! [`BreakerLayer`]: the breaker of a name (or a keyed family) around a service.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use super::future::BreakerCall;
use super::{Breaker, BreakerBuilder, BreakerKey, KeyedBreaker};
use crate::fallback::Failure;
use crate::named::Origin;
use crate::tower::{AnyError, BoxError, Classify, FailureIf, ServerErrors};
use crate::{ConfigError, Rejected};

/// The layer's breaker is one for every request (the default).
#[derive(Copy, Clone, Debug, Default)]
pub struct Unkeyed;

/// The layer's breakers are a keyed family, one per the key that `F` gives each request
/// ([`BreakerLayer::key_by`]).
#[derive(Copy, Clone)]
pub struct KeyBy<F>(F);

impl<F> fmt::Debug for KeyBy<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyBy")
    }
}

/// A service's keyed family and the function that keys each request.
#[derive(Clone)]
pub struct PerKey<F> {
    family: Arc<KeyedBreaker>,
    key: F,
}

impl<F> fmt::Debug for PerKey<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerKey")
            .field("family", &self.family)
            .finish_non_exhaustive()
    }
}

/// A [`Layer`] that puts a circuit breaker around a service: the breaker registered under its
/// name, the one `#[breaker(name = ...)]`, [`breaker::get`](crate::breaker::get) and the
/// run-time settings by name see. See [the module](super) for where refusals happen and why.
///
/// * `C` classifies outcomes: [`AnyError`] by default, [`ServerErrors`]
///   ([`http_server_errors`](Self::http_server_errors)), [`FailureIf`]
///   ([`failure_if`](Self::failure_if)).
/// * `K` picks the breaker: [`Unkeyed`] by default, [`KeyBy`] ([`key_by`](Self::key_by)) for a
///   keyed family of the layer's name.
///
/// The breaker (or the family) is registered when the layer first wraps a service, with the
/// layer's options if the name is new; every service the layer (and its clones) makes shares
/// it, and wrapping another service (per connection, say) takes no lock and allocates nothing
/// that outlives the service. Should the name belong to the other kind (a keyed family, for a
/// layer without `key_by`), the layer gets a breaker of its own, unregistered, and a `tracing`
/// warning says so.
#[derive(Clone)]
pub struct BreakerLayer<C = AnyError, K = Unkeyed> {
    name: Arc<str>,
    options: BreakerBuilder,
    classify: C,
    key: K,
    resolved: Arc<Resolved>,
}

/// The breaker (or the family) of a layer and its clones, found on the first wrap.
#[derive(Default)]
struct Resolved {
    single: OnceLock<&'static Breaker>,
    family: OnceLock<Arc<KeyedBreaker>>,
}

impl<C, K> fmt::Debug for BreakerLayer<C, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerLayer")
            .field("name", &&*self.name)
            .finish_non_exhaustive()
    }
}

impl BreakerLayer {
    /// The layer of the breaker named by `options` (or, with [`key_by`](Self::key_by), of the
    /// keyed family of that name): the one registered under the name, registered with these
    /// options if the name is new, as with [`BreakerBuilder::register`]. Options that break a
    /// rule are an error now.
    ///
    /// ```
    /// use resiliency::tower::BreakerLayer;
    /// use resiliency::Breaker;
    ///
    /// let layer = BreakerLayer::new(Breaker::builder("inventory").error_threshold(3)).unwrap();
    /// assert_eq!(layer.name(), "inventory");
    /// assert!(BreakerLayer::new(Breaker::builder("inventory").error_threshold(0)).is_err());
    /// ```
    pub fn new(options: BreakerBuilder) -> Result<Self, ConfigError> {
        let name = options.validate()?.name;
        Ok(BreakerLayer {
            name,
            options,
            classify: AnyError,
            key: Unkeyed,
            resolved: Arc::default(),
        })
    }
}

impl<C, K> BreakerLayer<C, K> {
    /// Classifies each outcome with `f`: true counts as a failure, false as a success. `f` sees
    /// the inner service's own `Result` (its response and error types), before any boxing.
    pub fn failure_if<Res, Err, F>(self, f: F) -> BreakerLayer<FailureIf<F>, K>
    where
        F: Fn(&Result<Res, Err>) -> bool + Clone,
    {
        BreakerLayer {
            name: self.name,
            options: self.options,
            classify: FailureIf(f),
            key: self.key,
            resolved: self.resolved,
        }
    }

    /// Counts errors and 5xx responses (`http::Response<B>`) as failures: see [`ServerErrors`].
    pub fn http_server_errors(self) -> BreakerLayer<ServerErrors, K> {
        BreakerLayer {
            name: self.name,
            options: self.options,
            classify: ServerErrors,
            key: self.key,
            resolved: self.resolved,
        }
    }

    /// One breaker per key: `f` keys each request (by host, say: [`authority_of`](crate::tower::authority_of)),
    /// and the breakers are a keyed family of the layer's name
    /// ([`breaker::get_keyed`](crate::breaker::get_keyed)) with the layer's options, created on
    /// first use and evicted when idle.
    pub fn key_by<Req, Key, F>(self, f: F) -> BreakerLayer<C, KeyBy<F>>
    where
        F: Fn(&Req) -> Key + Clone,
        Key: BreakerKey,
    {
        BreakerLayer {
            name: self.name,
            options: self.options,
            classify: self.classify,
            key: KeyBy(f),
            resolved: self.resolved,
        }
    }

    /// The name of the layer's breaker (or keyed family).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<S, C: Clone> Layer<S> for BreakerLayer<C, Unkeyed> {
    type Service = BreakerService<S, C, &'static Breaker>;

    fn layer(&self, inner: S) -> Self::Service {
        // A registered breaker lives as long as the registry, which never drops it: the service
        // holds it by a `'static` reference, so that a request moves no reference count (a
        // counter every thread would write).
        // Events of the registration are emitted once the breaker is in place: a subscriber may
        // wrap a service with this layer.
        let breaker = *crate::later::hold(|| {
            self.resolved.single.get_or_init(|| {
                let options = self.options.clone();
                options.clone().register_static(Origin::Layer).map_or_else(
                    |error| {
                        crate::later::emit(move || tracing::warn!(target: "resiliency::breaker", %error, "using an unregistered breaker"));
                        let own = Arc::new(options.build().expect("the options were checked"));
                        // Once per layer (and its clones), like a registered one.
                        &**Box::leak(Box::new(own))
                    },
                    |registered| &**registered,
                )
            })
        });
        BreakerService {
            inner,
            classify: self.classify.clone(),
            breakers: breaker,
        }
    }
}

impl<S, C: Clone, F: Clone> Layer<S> for BreakerLayer<C, KeyBy<F>> {
    type Service = BreakerService<S, C, PerKey<F>>;

    fn layer(&self, inner: S) -> Self::Service {
        let family = crate::later::hold(|| {
            self.resolved.family.get_or_init(|| {
                let options = self.options.clone();
                options.clone().register_keyed_as(Origin::Layer).unwrap_or_else(|error| {
                    crate::later::emit(move || tracing::warn!(target: "resiliency::breaker", %error, "using an unregistered keyed breaker"));
                    Arc::new(options.build_keyed().expect("the options were checked"))
                })
            })
        });
        BreakerService {
            inner,
            classify: self.classify.clone(),
            breakers: PerKey {
                family: family.clone(),
                key: self.key.0.clone(),
            },
        }
    }
}

/// The service of a [`BreakerLayer`]: `B` is its breaker (`&'static Breaker`: the registered
/// one) or its keyed family ([`PerKey`]).
#[derive(Clone)]
pub struct BreakerService<S, C, B> {
    inner: S,
    classify: C,
    breakers: B,
}

impl<S: fmt::Debug, C, B: fmt::Debug> fmt::Debug for BreakerService<S, C, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerService")
            .field("inner", &self.inner)
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}

impl<S, C> BreakerService<S, C, &'static Breaker> {
    /// The service's breaker.
    pub fn breaker(&self) -> &'static Breaker {
        self.breakers
    }
}

impl<S, C, F> BreakerService<S, C, PerKey<F>> {
    /// The service's keyed family.
    pub fn family(&self) -> &Arc<KeyedBreaker> {
        &self.breakers.family
    }
}

impl<S, C, B> BreakerService<S, C, B> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    fn call_with<Req, H>(&mut self, breaker: H, request: Req) -> BreakerFuture<S::Future, C, H>
    where
        H: std::ops::Deref<Target = Breaker>,
        S: Service<Req>,
        S::Error: Into<BoxError>,
        C: Classify<S::Response, S::Error> + Clone,
    {
        let inner = &mut self.inner;
        let classify = self.classify.clone();
        let call = BreakerCall::admit_now(
            breaker,
            every_failure as fn(&_) -> bool,
            hint_of as fn(&_) -> Option<Duration>,
            || Outcome {
                inner: inner.call(request),
                classify,
            },
        );
        BreakerFuture {
            state: match call {
                Ok(call) => State::Admitted { call },
                Err(rejected) => State::Refused {
                    rejected: Some(rejected),
                },
            },
        }
    }
}

impl<S, C, Req> Service<Req> for BreakerService<S, C, &'static Breaker>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BreakerFuture<S::Future, C, &'static Breaker>;

    /// The inner service's readiness: the breaker refuses in `call`, at once.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let breaker = self.breakers;
        self.call_with(breaker, request)
    }
}

impl<S, C, F, Key, Req> Service<Req> for BreakerService<S, C, PerKey<F>>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error> + Clone,
    F: Fn(&Req) -> Key,
    Key: BreakerKey,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BreakerFuture<S::Future, C, Arc<Breaker>>;

    /// The inner service's readiness: the key's breaker refuses in `call`, at once.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let breaker = self.breakers.family.breaker(&(self.breakers.key)(&request));
        self.call_with(breaker, request)
    }
}

/// The error of the breaker's call: an outcome that the classifier counts as a failure (which
/// goes to the caller as it is, a 5xx response included) with the wait its upstream asked for
/// (`Classify::retry_after`), or the breaker's refusal.
type Counted<T> = Failure<(T, Option<Duration>)>;

/// The breaker's call counts every error: [`Outcome`] has classified the response already.
fn every_failure<T>(_: &Counted<T>) -> bool {
    true
}

/// The wait the upstream asked for with a failure, as the classifier read it.
fn hint_of<T>(failure: &Counted<T>) -> Option<Duration> {
    match failure {
        Failure::Error((_, hint)) => *hint,
        Failure::Refused(_) => None,
    }
}

pin_project! {
    /// The inner service's future, its outcome classified: `Ok` with the outcome when it counts
    /// as a success, `Err` when it counts as a failure. The classifier runs inside the breaker's
    /// call, so that a classifier that panics counts as an error, as a body that panics does.
    struct Outcome<F, C> {
        #[pin]
        inner: F,
        classify: C,
    }
}

impl<F, C, Res, Err> Future for Outcome<F, C>
where
    F: Future<Output = Result<Res, Err>>,
    C: Classify<Res, Err>,
{
    type Output = Result<Result<Res, Err>, Counted<Result<Res, Err>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = std::task::ready!(this.inner.poll(cx));
        Poll::Ready(if this.classify.is_failure(&outcome) {
            let hint = this.classify.retry_after(&outcome);
            Err(Failure::Error((outcome, hint)))
        } else {
            Ok(outcome)
        })
    }
}

/// The breaker's call around an inner service's future `F` whose outcome `C` classifies.
type Call<F, C, H> = BreakerCall<H, Outcome<F, C>, Counted<<F as Future>::Output>>;

pin_project! {
    #[project = StateProj]
    enum State<F, C, H>
    where
        F: Future,
        H: std::ops::Deref<Target = Breaker>,
    {
        Admitted {
            #[pin]
            call: Call<F, C, H>,
        },
        Refused {
            rejected: Option<Rejected>,
        },
    }
}

pin_project! {
    /// The response future of a [`BreakerService`]: the inner service's response, or a
    /// [`Rejected`] in a [`BoxError`] (refused when the call was made, or past the breaker's
    /// `timeout`), or the inner service's error, boxed.
    #[must_use = "futures do nothing unless polled"]
    pub struct BreakerFuture<F, C, H>
    where
        F: Future,
        H: std::ops::Deref<Target = Breaker>,
    {
        #[pin]
        state: State<F, C, H>,
    }
}

impl<F: Future, C, H: std::ops::Deref<Target = Breaker>> fmt::Debug for BreakerFuture<F, C, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let refused = matches!(self.state, State::Refused { .. });
        f.debug_struct("BreakerFuture")
            .field("refused", &refused)
            .finish_non_exhaustive()
    }
}

impl<F, C, H, Res, Err> Future for BreakerFuture<F, C, H>
where
    H: std::ops::Deref<Target = Breaker>,
    F: Future<Output = Result<Res, Err>>,
    Err: Into<BoxError>,
    C: Classify<Res, Err>,
{
    type Output = Result<Res, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted { call } => Poll::Ready(match std::task::ready!(call.poll(cx)) {
                Ok(outcome) | Err(Failure::Error((outcome, _))) => outcome.map_err(Into::into),
                Err(Failure::Refused(timed_out)) => Err(Box::new(timed_out)),
            }),
            StateProj::Refused { rejected } => {
                // Yields first when the task's cooperative budget is spent, as for the attributes.
                std::task::ready!(crate::rejected::poll_refusal(cx));
                Poll::Ready(Err(Box::new(rejected.take().expect(
                    "a breaker's response future was polled after it completed",
                ))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// Wrapping a service takes no lock that registering holds: a server wraps one per connection.
    #[test]
    fn wrapping_a_service_takes_no_registry_write_lock() {
        let single = BreakerLayer::new(Breaker::builder("tower.unit.no_lock")).unwrap();
        let keyed = BreakerLayer::new(Breaker::builder("tower.unit.no_lock_keyed"))
            .unwrap()
            .key_by(|key: &u32| *key);
        let _ = single.layer(());
        drop(keyed.layer(()));
        let (done, wrapped) = mpsc::channel();
        let registry = crate::breaker::registry::read_lock();
        let wrapping = std::thread::spawn(move || {
            for _ in 0..1_000 {
                let _ = single.layer(());
                drop(keyed.layer(()));
            }
            let _ = done.send(());
        });
        let outcome = wrapped.recv_timeout(Duration::from_secs(2));
        drop(registry);
        wrapping.join().unwrap();
        assert!(
            outcome.is_ok(),
            "wrapping a service waited for the registry's write lock"
        );
    }
}
