//! Tower layers over the engines of the attributes (feature `tower`): [`BreakerLayer`],
//! [`TooBusyLayer`], [`RaceRetryLayer`], [`TimeoutLayer`] and [`RateLimitLayer`].
//!
//! Each layer drives the policy registered under its name, the one the attribute of that name,
//! [`breaker::get`](crate::breaker::get), [`too_busy::get`](crate::too_busy::get),
//! [`race_retry::get`](crate::race_retry::get) and [`timeout::get`](crate::timeout::get) return: the run-time [`settings`](crate::settings) by name
//! and the `metrics` series by name apply to it with no code of yours. The first to register a
//! name (a layer, an attribute's first call, a builder's `register`) gives its options; a layer
//! whose own options differ uses the registered policy all the same, and logs the difference as
//! a settings error (target `resiliency::settings`) naming the setting and both values.
//!
//! # A circuit breaker
//!
//! ```
//! use std::time::Duration;
//! use resiliency::tower::{BoxError, BreakerLayer};
//! use resiliency::{breaker, Breaker, Rejected};
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), resiliency::tower::BoxError> {
//! let mut inventory = ServiceBuilder::new()
//!     .layer(BreakerLayer::new(
//!         Breaker::builder("inventory").error_threshold(2).timeout(Duration::from_secs(1)),
//!     )?)
//!     .service(service_fn(|sku: u32| async move {
//!         if sku == 0 { Err(std::io::Error::other("no such sku")) } else { Ok(sku * 10) }
//!     }));
//! assert_eq!(inventory.ready().await?.call(4).await?, 40);
//! for _ in 0..2 {
//!     let error: BoxError = inventory.ready().await?.call(0).await.unwrap_err();
//!     assert!(error.downcast_ref::<std::io::Error>().is_some()); // the inner error, boxed
//! }
//! // Open: refused at once, the inner service not called.
//! let error = inventory.ready().await?.call(4).await.unwrap_err();
//! assert!(error.downcast_ref::<Rejected>().unwrap().is_circuit_open());
//! assert_eq!(breaker::get("inventory").unwrap().state(), breaker::State::Open);
//! # Ok(())
//! # }
//! ```
//!
//! **Classification.** By default an `Err` of the inner service counts as a failure and an `Ok`
//! as a success. [`BreakerLayer::failure_if`] takes a closure over the inner service's own
//! `Result` (true: a failure; false: a success), and [`BreakerLayer::http_server_errors`]
//! counts errors and `http::Response`s whose status is 5xx ([`server_errors`]); the response
//! itself still reaches the caller.
//!
//! **Keys.** [`BreakerLayer::key_by`] gives one breaker per key of each request, a keyed family
//! of the layer's name ([`breaker::get_keyed`](crate::breaker::get_keyed)): with
//! [`authority_of`], one breaker per upstream host of an HTTP client, so that one dead host does
//! not cut off the others.
//!
//! ```
//! use std::convert::Infallible;
//! use resiliency::tower::{authority_of, BreakerLayer};
//! use resiliency::{breaker, Breaker};
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), resiliency::tower::BoxError> {
//! let mut client = ServiceBuilder::new()
//!     .layer(
//!         BreakerLayer::new(Breaker::builder("upstreams").error_threshold(1))?
//!             .http_server_errors()
//!             .key_by(authority_of::<()>),
//!     )
//!     .service(service_fn(|request: http::Request<()>| async move {
//!         let status = if request.uri().host() == Some("down.test") { 502 } else { 200 };
//!         Ok::<_, Infallible>(http::Response::builder().status(status).body(()).unwrap())
//!     }));
//! let get = |url: &str| http::Request::get(url).body(()).unwrap();
//! assert_eq!(client.ready().await?.call(get("http://down.test/")).await?.status(), 502);
//! assert!(client.ready().await?.call(get("http://down.test/")).await.is_err()); // open
//! assert_eq!(client.ready().await?.call(get("http://up.test/")).await?.status(), 200);
//! let hosts = breaker::get_keyed("upstreams").unwrap();
//! assert_eq!(hosts.get("down.test").unwrap().state(), breaker::State::Open);
//! # Ok(())
//! # }
//! ```
//!
//! # Load shedding
//!
//! ```
//! use std::time::Duration;
//! use resiliency::too_busy::TooBusy;
//! use resiliency::tower::TooBusyLayer;
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), resiliency::tower::BoxError> {
//! let mut search = ServiceBuilder::new()
//!     .layer(TooBusyLayer::new(TooBusy::builder("search").max_in_flight(1))?)
//!     .service(service_fn(|query: &'static str| async move {
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!         Ok::<_, std::io::Error>(query.len())
//!     }));
//! let first = search.ready().await?.call("rust");
//! let second = search.ready().await?.call("tower");
//! let (first, second) = tokio::join!(first, second);
//! assert_eq!(first?, 4);
//! assert!(resiliency::Rejected::find_in(&*second.unwrap_err()).unwrap().is_too_busy());
//! # Ok(())
//! # }
//! ```
//!
//! The guard is asked in `call`, so a refused request never reaches the inner service; an admitted
//! request's slot is held from then until its response future completes or is dropped (a client
//! gone, a timeout), as [`TooBusy::call`](crate::too_busy::TooBusy::call) holds it.
//!
//! # Raced retries
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use resiliency::race_retry::{After, RaceRetry};
//! use resiliency::tower::RaceRetryLayer;
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), resiliency::tower::BoxError> {
//! let attempts = Arc::new(AtomicU32::new(0));
//! let seen = attempts.clone();
//! let mut lookup = ServiceBuilder::new()
//!     .layer(RaceRetryLayer::new(
//!         RaceRetry::builder("lookup")
//!             .retries(1)
//!             .after(After::Fixed(Duration::from_millis(50)))
//!             .total(Duration::from_millis(500)),
//!     )?)
//!     .service(service_fn(move |id: u64| {
//!         let attempt = seen.fetch_add(1, Ordering::Relaxed) + 1;
//!         async move {
//!             // The first attempt is stuck; the second, started 50 ms later, answers.
//!             let wait = if attempt == 1 { 10_000 } else { 5 };
//!             tokio::time::sleep(Duration::from_millis(wait)).await;
//!             Ok::<_, std::io::Error>((id, attempt))
//!         }
//!     }));
//! assert_eq!(lookup.ready().await?.call(7).await?, (7, 2));
//! # Ok(())
//! # }
//! ```
//!
//! **Clone.** Each attempt gets its own copy of the request and of the inner service: the
//! service needs `S: Clone` and the request `Req: Clone`. Attempt 1 uses the service that
//! `poll_ready` readied; each later one clones the service, waits for its `poll_ready` and calls
//! it. For `http::Request<B>`, `B` must be `Clone` (`Empty`, `Full<Bytes>`, `String`): a
//! streaming body cannot be sent twice. A request type that is not `Clone` is a compile error at
//! the call: "the race layer sends each attempt its own copy of the request: `Upload` must be
//! Clone" (and likewise for the service).
//! Through method syntax (`svc.oneshot(req)`), rustc only says that the trait bounds of
//! `RaceRetryService` were not satisfied; `Service::call(&mut svc, req)` shows the message.
//! [`RaceRetryLayer::retry_if`] narrows the errors worth another attempt. Past `total`, the call
//! is a [`Rejected`](crate::Rejected) whose [`is_deadline`](crate::Rejected::is_deadline) is true.
//! The first `Ok` wins, whatever it holds: an HTTP 503 is an answer, not a failure (map the
//! responses you want retried to errors in a layer below the race). The race layer reads no
//! `Retry-After` and no [`RetryHint`](crate::RetryHint) (`#[race_retry]` and
//! [`RaceRetry::run_hinted`](crate::race_retry::RaceRetry::run_hinted) do): the next attempt
//! starts on its schedule whatever an error asked. Put the race above a breaker so that every
//! attempt goes through it, and leave its refusals out of `retry_if`
//! (`Rejected::find_in(&**error).is_none()`): an open breaker is an answer too.
//!
//! # Where a refusal happens: `call`, not `poll_ready`
//!
//! Every layer's `poll_ready` is the inner service's, and a refusal is the response future's
//! error, ready at once (tower's own `load_shed` does the same; like tokio's own resources, it
//! takes from the task's cooperative budget, and yields first once that is spent): the breaker and the too-busy
//! guard are asked in `call` itself, before the inner service is called, so a refused request
//! never reaches it (not even a `Buffer`'s queue). Refusing in `poll_ready` instead would be
//! wrong three ways:
//!
//! * `poll_ready` has no request, so it cannot know the key of a keyed breaker: one open host
//!   would make the client not ready for every host.
//! * A service that is not ready makes its caller wait (a `ServiceBuilder` stack, axum, hyper
//!   and `Buffer` all wait for readiness); a breaker is there to fail fast, and an open one
//!   would turn every request into a wait until it half-opens, then let the waiting crowd in.
//! * Balancers (`tower::balance`) and `Buffer` read not-ready as "busy, try another or wait
//!   later": a refused request should instead be an answer the caller can act on (a 503, a
//!   fallback), as an error it can find with [`Rejected::find_in`](crate::Rejected::find_in).
//!
//! # Errors
//!
//! Every layer's service has the error [`BoxError`] (tower's): a refusal is a
//! [`Rejected`](crate::Rejected) inside it (`error.downcast_ref::<Rejected>()`, or
//! [`Rejected::find_in`](crate::Rejected::find_in) through any further wrapping), and an error
//! of the inner service is boxed as it is (downcast it to its own type). Stacked layers compose:
//! a breaker's refusal passes through a race layer above it as its attempt's error.
//!
//! axum's `Router::layer` needs services whose error is `Infallible`: put axum's
//! `HandleErrorLayer` with [`error_response`] (the `axum` feature) above the layer, which
//! answers a refusal with the 503 or 504 of [`http`](crate::http) and names nothing inside the
//! service:
//!
//! ```
//! # #[cfg(feature = "axum")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), resiliency::ConfigError> {
//! use axum::error_handling::HandleErrorLayer;
//! use axum::routing::get;
//! use axum::Router;
//! use resiliency::too_busy::TooBusy;
//! use resiliency::tower::{error_response, TooBusyLayer};
//! use tower::ServiceBuilder;
//!
//! async fn handler() -> &'static str {
//!     "hello"
//! }
//!
//! let app: Router = Router::new().route("/", get(handler)).layer(
//!     ServiceBuilder::new()
//!         .layer(HandleErrorLayer::new(error_response))
//!         .layer(TooBusyLayer::new(TooBusy::builder("api").max_in_flight(256))?),
//! );
//! # let _ = app;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "axum"))]
//! # fn main() {}
//! ```
//!
//! # Guarantees
//!
//! The layers add no state of their own to the engines', whose guarantees hold
//! ([`breaker`](crate::breaker), [`too_busy`](crate::too_busy), [`race_retry`](crate::race_retry),
//! [`timeout`](crate::timeout)):
//!
//! * **A response future dropped** at any point (before its first poll too) gives back what it
//!   holds: a breaker's probe slot or a guard's slot (both taken in `call`), counting neither
//!   way; a race's attempts, every one dropped with it; a time limit's inner future and timer.
//! * **An inner service that panics**: in its future, the breaker counts an error, the guard's
//!   slot comes back once the future is dropped, the race ends with the panic; in its `call`, a
//!   probe slot taken for it comes back and nothing counts. A classifier or `retry_if` that
//!   panics counts as the engine's own predicates do.
//! * **Per call**, the breaker service clones one `Arc` (a keyed one looks the key up, lock-free)
//!   and the classifier; no future is boxed, no lock taken. A race's attempt after the first is
//!   boxed by the engine, as for `#[race_retry]`.

mod classify;
mod err_into;

pub(crate) use err_into::ErrInto;

/// The error of every layer's service: a [`Rejected`](crate::Rejected) when the policy refused
/// the request, else the inner service's error, boxed as it is (tower's `BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub use crate::breaker::layer::{BreakerLayer, BreakerService, KeyBy, PerKey, Unkeyed};
pub use crate::race_retry::layer::{RaceRetryLayer, RaceRetryService, RetryIf, RetryWith};
pub use crate::rate_limit::layer::{RateLimitLayer, RateLimitService};
/// What picks a [`RateLimitLayer`]'s limit for a request.
pub mod rate_limit {
    pub use crate::rate_limit::layer::{KeyBy, PickKey, Unkeyed};
}
pub use crate::timeout::layer::{TimeoutLayer, TimeoutService};
pub use crate::too_busy::layer::{TooBusyLayer, TooBusyService};
pub use classify::{server_errors, AnyError, Classify, FailureIf, ServerErrors};

/// The response futures of the layers' services. Code rarely spells them out.
pub mod future {
    pub use crate::breaker::layer::BreakerFuture;
    pub use crate::race_retry::layer::RaceFuture;
    pub use crate::rate_limit::layer::RateLimitFuture;
    pub use crate::timeout::layer::TimeoutFuture;
    pub use crate::too_busy::layer::TooBusyFuture;
}

/// The authority a request is for, without any credentials: its URI's (`host:port` as written,
/// less a `user:password@` part), else its `Host` header's, else empty. A key for
/// [`BreakerLayer::key_by`]: one breaker per upstream, whoever the request logs in as, and no
/// password in breaker keys, refusals, events or logs.
pub fn authority_of<B>(request: &http::Request<B>) -> String {
    let authority = match request.uri().authority() {
        Some(authority) => authority.as_str(),
        None => request
            .headers()
            .get(http::header::HOST)
            .and_then(|host| host.to_str().ok())
            .unwrap_or_default(),
    };
    // The host and port follow the last `@` (a password may hold one too).
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_owned()
}

/// With the `axum` feature: the response for a layer's error, for axum's `HandleErrorLayer`
/// (axum's `Router::layer` takes services whose error is `Infallible`). A refusal is the 503 or 429 (with
/// `Retry-After`) or 504 of [`http`](crate::http), naming nothing inside the service; any other
/// error is a bare `500 Internal Server Error`, its message sent to `tracing` (target
/// `resiliency::http`, level `debug`).
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub async fn error_response(error: BoxError) -> axum_core::response::Response {
    use axum_core::response::IntoResponse;

    crate::http::response_for(&*error).unwrap_or_else(|| {
        tracing::debug!(target: "resiliency::http", %error, "an inner service failed");
        http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
    })
}
