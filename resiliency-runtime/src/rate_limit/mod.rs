//! A rate limit: `#[rate_limit(rate = "100/s")]`, [`RateLimit::call`] or a
//! [`RateLimitLayer`](crate::tower::RateLimitLayer).
//!
//! At most `rate` calls per period, paced evenly, with up to `burst` at once after a quiet while:
//! the generic cell rate algorithm (GCRA), as governor and redis-cell implement it. Its state is
//! one atomic word, the time the calls admitted so far would all have come at the rate's pace;
//! a call is admitted while that time is at most `burst` intervals ahead of now, with one
//! compare-and-swap, no lock, no background task and no timer. A call over the limit is refused
//! at once with `Err(E::from(Rejected))`, of kind
//! [`RejectedKind::RateLimited`](crate::RejectedKind::RateLimited), whose
//! [`retry_after`](crate::Rejected::retry_after) is the time until its permit frees (with the
//! `axum` feature: `429 Too Many Requests` and `Retry-After`); or, with `max_wait`, it waits for
//! its permit, first come first served, if that permit frees within `max_wait`.
//!
//! ```
//! use std::time::Duration;
//! use resiliency::{rate_limit, Rejected};
//!
//! // A partner API that takes 10 calls a second, 2 at once.
//! #[rate_limit(rate = "10/s", burst = 2)]
//! async fn partner(id: u64) -> Result<u64, Rejected> {
//!     Ok(id)
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! assert_eq!(partner(1).await.unwrap(), 1);
//! assert_eq!(partner(2).await.unwrap(), 2); // the burst
//! let refused = partner(3).await.unwrap_err();
//! assert!(refused.is_rate_limited());
//! assert_eq!(refused.retry_after(), Some(Duration::from_millis(100)));
//! tokio::time::sleep(Duration::from_millis(100)).await;
//! assert_eq!(partner(4).await.unwrap(), 4); // a permit every 100 ms
//! # }
//! ```
//!
//! # The rule
//!
//! With `interval = period / count` (`"100/s"`: 10 ms) and `tolerance = burst x interval`, a call
//! at `now` is admitted when `max(tat, now) + interval - now <= tolerance`, and `tat` becomes
//! `max(tat, now) + interval`. Over any span of time `t`, the calls admitted are at most
//! `t / interval + burst`, however they arrive and from however many threads. A refused call's
//! `retry_after` is how far the calls admitted run past the tolerance: a call made that much
//! later is admitted, if no other took the permit first.
//!
//! With `max_wait`, a call whose permit frees within it takes that permit at once (the word moves
//! on, so calls wait in the order they came) and sleeps until it frees; a call that must wait
//! past the deadline of a guard around it ([`resiliency::deadline`](crate::deadline)) is refused
//! at once instead. A call dropped while it waits gives its permit back if no later call took
//! one since (else that permit is spent: the calls behind it keep their places).
//!
//! # Keys
//!
//! [`RateLimit::call_keyed`] (`#[rate_limit(key = client_ip)]`) gives each key an arrival time of
//! its own, with the limit's settings: any `Hash` value is a key, filed by a hash seeded at random
//! per limit. At most `max_keys` keys are held (about 50 bytes each): a new key that finds them
//! all sweeps out the keys at rest (their permits all free again, as good as new: nothing is lost
//! by dropping them); if every key held is busy, it shares one limit with the other keys that do
//! not fit, until keys come to rest. Keys are filed in shards, each behind a reader-writer lock:
//! a call takes its shard's read lock, a new key or a sweep a write lock.
//!
//! # Guarantees
//!
//! * **The body panics**, or **the call is dropped** while its body runs: its permit was spent
//!   when it was admitted, as for any call that ran; nothing else is held.
//! * **A call dropped while it waits**, or before its first poll: one never polled took no permit;
//!   one dropped in its wait gives its permit back when no later call has taken one since.
//! * **No time driver**: admission reads the clock and sets no timer, so a limit without
//!   `max_wait` works on any executor. A call that must wait, outside a tokio runtime or on one
//!   built without `enable_time`, panics at its first poll with tokio's message ("timers are
//!   disabled"), its permit given back.
//! * **Threads that come and go** share the one word: no per-thread state.
//! * **Settings at their extremes**: a rate's interval is at least 1 ns; a burst of `u32::MAX`
//!   or a `max_wait` of centuries saturates rather than wraps. A change of `rate` or `burst` at
//!   run time keeps the calls admitted counting (no new burst is freed by it).
//! * **Blocking calls** ([`RateLimit::call_blocking`]) follow the same rule on the caller's
//!   thread, sleeping the thread for a permit within `max_wait`.
//!
//! # Events and metrics
//!
//! Each refusal is a `tracing` event at level debug (target `resiliency::rate_limit`, message
//! "call refused", with `name`, `rate` and `retry_after_ms`). With the `metrics` feature,
//! `resiliency_rate_limit_calls_total` counts calls by `outcome`: `admitted`, `waited` (admitted
//! after a wait) and `refused`.

mod builder;
pub mod future;
#[cfg(feature = "tower")]
pub(crate) mod layer;
mod meter;
// The engine type, in the file of its policy's name as in every policy's folder.
#[allow(clippy::module_inception)]
mod rate_limit;
mod registry;
mod settings;

pub use builder::RateLimitBuilder;
pub use rate_limit::RateLimit;
pub use registry::get;
pub(crate) use registry::set_up;
pub use resiliency_rules::{parse_rate, Rate};
