//! The engines behind the `resilient` attributes: circuit breakers, and the [`Rejected`] error that
//! every policy refuses a call with.
//!
//! Depend on the `resilient` crate, which re-exports everything here next to the attributes. The
//! runtime is usable on its own, without the macros:
//!
//! ```
//! use std::time::Duration;
//! use resilient_runtime::Breaker;
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

pub mod breaker;
pub mod busy;
#[cfg(feature = "axum")]
pub mod http;
pub mod race;
mod random;
mod rejected;
mod sync;

#[doc(hidden)]
pub mod __private;

pub use breaker::{Breaker, BreakerBuilder, KeyedBreaker};
pub use rejected::{Rejected, RejectedKind};
