//! A time limit on one call: `#[timeout("2s")]`, [`Timeout::call`] or a
//! [`TimeoutLayer`](crate::tower::TimeoutLayer).
//!
//! A call that has not answered within `total` has its body dropped (its sockets closed, its
//! guards released) and returns `Err(E::from(Rejected))`, of kind
//! [`RejectedKind::Timeout`](crate::RejectedKind::Timeout) ([`Rejected::is_timeout`](crate::Rejected::is_timeout)),
//! which the `axum` feature answers `504 Gateway Timeout`. The body reads when it will be cut off
//! with [`resiliency::deadline`](crate::deadline) and [`time_left`](crate::time_left), to pass it
//! on (a header, a statement timeout); a time limit inside another guard with a time limit gives
//! the sooner of the two.
//!
//! ```
//! use std::time::Duration;
//! use resiliency::{timeout, Rejected};
//!
//! #[timeout("100ms")]
//! async fn lookup(id: u64) -> Result<String, Rejected> {
//!     // What an upstream call would send as its own timeout.
//!     let left = resiliency::time_left().expect("under a time limit");
//!     if id == 0 {
//!         tokio::time::sleep(Duration::from_secs(1)).await; // a stuck upstream
//!     }
//!     Ok(format!("item {id}, {} ms to spare", left.as_millis()))
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! assert_eq!(lookup(7).await.unwrap(), "item 7, 100 ms to spare");
//! let err = lookup(0).await.unwrap_err();
//! assert!(err.is_timeout());
//! assert!(err.to_string().ends_with("did not answer within its time limit of 100ms"));
//! # }
//! ```
//!
//! # When the time counts from
//!
//! From the body's first wait: a body that answers on its first poll reads no clock and registers
//! no timer; one that waits reads the clock then and arms the call's timer (held in the call's
//! future, as `tokio::time::timeout` holds its own: nothing is allocated), disarmed when the call
//! ends. A body that reads its deadline before it first waits starts
//! the clock at that read. (What the first poll runs before its first wait is the body's own
//! code on this thread, which no timer could interrupt.) The body is polled before the timer, so
//! an answer that comes as the time runs out is kept, as with `tokio::time::timeout`.
//!
//! # Where it goes in a stack
//!
//! Stacked attributes apply top to bottom, the first written outermost. `#[timeout]` above
//! `#[race_retry]` bounds the whole race (whose own `total` then only matters if it is the
//! shorter); below `#[breaker]`, a call it cuts off is an error the breaker counts, as a
//! breaker's own `timeout` would be. Under a breaker whose `timeout` is shorter, the breaker's
//! fires first.
//!
//! # Guarantees
//!
//! A time limit holds no slot and no shared state but its counts, so whatever the code around
//! it does, there is nothing to give back:
//!
//! * **The body panics**: the panic goes on to the caller; the call counts neither as completed
//!   nor timed out.
//! * **The call is dropped** at any point (before its first poll, while its body waits): its body
//!   and timer are dropped with it, and it counts nothing.
//! * **No time driver**: a call whose body answers on its first poll runs anywhere, with no
//!   timer. One that waits, outside a tokio runtime or on one built without `enable_time`, panics
//!   at its first wait with tokio's message ("timers are disabled"), as `tokio::time::timeout`
//!   does, its body dropped.
//! * **Settings at their extremes**: a `total` beyond what an `Instant` can count (up to
//!   `Duration::MAX`) means never: no timer is made. A `total` of zero is refused by the rules
//!   (at compile time for a literal, by [`TimeoutBuilder::build`] and the settings by name
//!   otherwise).
//! * **Settings changed at run time** apply to calls that start after the change; a call keeps
//!   the `total` it started with.
//!
//! # Events and metrics
//!
//! Each call cut off is a `tracing` event at level debug (target `resiliency::timeout`, message
//! "call timed out", with the time limit's `name` and `total_ms`). With the `metrics` feature, `resiliency_timeout_calls_total` counts each call that ended, by
//! `outcome`: `completed` (it answered, `Ok` or `Err`, in time) or `timed_out`.

mod builder;
pub mod future;
#[cfg(feature = "tower")]
pub(crate) mod layer;
mod meter;
mod registry;
mod settings;
// The engine type, in the file of its policy's name as in every policy's folder.
#[allow(clippy::module_inception)]
mod timeout;

pub use builder::TimeoutBuilder;
pub use registry::get;
pub(crate) use registry::set_up;
pub use timeout::Timeout;
