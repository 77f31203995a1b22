//! The engines behind the `resiliency` attributes, usable without them: circuit breakers
//! ([`breaker`]: Semian's rules, `capacity`, a rate rule, keyed families and a registry by name),
//! load shedding ([`too_busy`]: the runtime's lag as toobusy-js measures it, a cap on calls in
//! flight, recent latency), raced retries under one deadline ([`race_retry`]: staggered attempts that
//! race instead of aborting, a shared retry budget, backoff), a time limit on one call
//! ([`timeout`]), a rate limit ([`rate_limit`]: GCRA in one atomic word, waits up to
//! `max_wait`), and the [`Rejected`] error every
//! policy refuses a call with. With the `axum` feature, `http` turns refusals into responses;
//! with the `metrics` feature, `metrics` lists the series every policy reports.
//!
//! Depend on the `resiliency` crate, which re-exports everything here next to the attributes.
//!
//! ```
//! use std::time::Duration;
//! use resiliency::Breaker;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let breaker = Breaker::builder("db").error_threshold(5).timeout(Duration::from_secs(2)).build().unwrap();
//! let rows: Result<u32, Box<dyn std::error::Error + Send + Sync>> = breaker.call(async { Ok(42) }).await;
//! assert_eq!(rows.unwrap(), 42);
//! # }
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod breaker;
mod config_error;
mod deadline;
mod fallback;
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub mod http;
mod later;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod named;
mod options;
pub mod race_retry;
mod random;
pub mod rate_limit;
mod rejected;
pub mod retry_hint;
pub mod settings;
mod stripes;
mod sync;
mod thread_number;
pub mod timeout;
pub mod too_busy;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[doc(hidden)]
pub mod __private;

#[cfg(test)]
mod layers;

pub use breaker::{Breaker, BreakerBuilder, KeyedBreaker};
pub use config_error::ConfigError;
pub use deadline::{deadline, time_left};
pub use rejected::{Rejected, RejectedKind};
pub use retry_hint::RetryHint;
