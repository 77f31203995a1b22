//! Make an async function resilient with one attribute.
//!
//! ```
//! use resiliency::{breaker, Rejected};
//!
//! #[derive(Debug)]
//! enum PayError {
//!     Declined,
//!     Unavailable(Rejected),
//! }
//!
//! impl From<Rejected> for PayError {
//!     fn from(r: Rejected) -> Self {
//!         PayError::Unavailable(r)
//!     }
//! }
//!
//! #[breaker(capacity = 0.75, timeout = "2s")]
//! async fn charge(cents: u64) -> Result<u64, PayError> {
//!     if cents == 0 { Err(PayError::Declined) } else { Ok(cents) }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! assert_eq!(charge(250).await.unwrap(), 250);
//! # }
//! ```
//!
//! * [`#[breaker]`](macro@breaker): a circuit breaker with Semian's semantics, plus `capacity`.
//! * [`#[too_busy]`](macro@too_busy): load shedding at a handler's entry when the runtime lags
//!   (toobusy-js, with the fix its users proposed), too many calls are in flight, or recent calls
//!   are slow.
//! * [`#[race_retry]`](macro@race_retry): retries that race the attempt in flight instead of
//!   aborting it, under one deadline, with a shared retry budget; `attempt = n` sends a retry to
//!   another replica.
//! * [`#[timeout]`](macro@timeout): a time limit on one call, its body dropped when it passes.
//! * [`#[rate_limit]`](macro@rate_limit): at most `rate` calls per period (GCRA), refused with
//!   the time until the next permit, or waiting for it up to `max_wait`.
//!
//! Each takes `fallback = path`, what a refused call returns instead
//! ([Fallbacks](macro@breaker#fallbacks)). Inside a guarded call, [`time_left`] says how long
//! the caller still waits, to pass on; an error that implements [`RetryHint`] (an upstream's
//! `Retry-After`) keeps a breaker open and the next attempt waiting as long as it asked.
//!
//! Everything the attributes use is also usable from code: [`Breaker::builder`], the
//! [`breaker`](mod@breaker) module's registry, subscriptions and keyed families, and the
//! [`too_busy`](mod@too_busy) module's monitor settings and `TooBusy` guards, the [`race_retry`](mod@race_retry) module's `RaceRetry`
//! policies, `observe` and stats, the [`timeout`](mod@timeout) module's `Timeout` and the [`rate_limit`](mod@rate_limit)
//! module's `RateLimit`. With the `axum` feature, the `http` module turns refusals into
//! 503 and 504 responses whose bodies name nothing inside the service. With the `metrics`
//! feature, every policy reports counters, gauges and histograms through the `metrics` facade
//! (the `metrics` module lists them). With the `tower` feature, the `tower` module has the
//! policies as tower layers, by name, for clients and servers. Every setting of every attribute can be overridden by name
//! at run time, from code, a configuration file or the environment, without a rebuild (the
//! [`settings`] module). A refused call returns `Err(E::from(Rejected))`;
//! [`Rejected`] says what was refused and why, and [`Rejected::find_in`] finds it inside any
//! error that keeps it as a source.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attributes;

pub use attributes::{breaker, race_retry, rate_limit, timeout, too_busy};
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub use resiliency_runtime::http;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use resiliency_runtime::metrics;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use resiliency_runtime::tower;
pub use resiliency_runtime::{
    breaker, race_retry, rate_limit, retry_hint, settings, timeout, too_busy,
};
pub use resiliency_runtime::{deadline, time_left};
pub use resiliency_runtime::{
    Breaker, BreakerBuilder, ConfigError, KeyedBreaker, Rejected, RejectedKind, RetryHint,
};

#[doc(hidden)]
pub use resiliency_runtime::__private;
