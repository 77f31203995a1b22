//! Circuit breakers with Semian's semantics, plus `capacity`, a rate rule, limited half-open probes,
//! exponential open time and keyed families.
//!
//! # Rules
//!
//! * **Closed**: calls run. Under the *count rule* (default) the breaker opens when
//!   `error_threshold` errors fall within `error_window`; successes in between do not reset the
//!   count. Under the *rate rule* it opens on an error when at least `min_calls` calls completed
//!   within `error_window` and `errors / calls >= failure_rate`. The window is kept in 10 time
//!   buckets. Errors are placed exactly; successes are counted without reading the clock and
//!   placed in batches: each thread's batch (at most 64) is spread evenly over the buckets from its
//!   first success to the moment it is placed, which happens when it is full and whenever an error
//!   is recorded or the window is read ([`Breaker::snapshot`]).
//! * **Open**: calls are refused with [`Rejected`](crate::Rejected) until `error_timeout` has passed
//!   since the **last** error (errors of calls still in flight extend it, as in Semian).
//! * **Half-open**: up to `half_open_calls` probes run at once (others are refused); one error
//!   re-opens, `success_threshold` successes close and clear the window. With `backoff > 1`, the
//!   n-th consecutive re-open stays open `error_timeout * backoff^n` (capped at
//!   `max_error_timeout`).
//! * `timeout` bounds every call (`half_open_timeout` bounds probes): an expired call is abandoned,
//!   counts as an error and returns a `Rejected` that says it timed out. The timer starts when the
//!   body first waits, so a call that answers on its first poll costs no timer.
//! * `slow_call_duration` counts a success slower than it as a failure; see [Slow
//!   calls](#slow-calls).
//! * An error whose [`RetryHint`](crate::RetryHint) asks for a wait (an HTTP `Retry-After`)
//!   keeps an opening breaker open at least that long, up to `max_error_timeout`: the hint of the
//!   error that opens it, of an earlier one whose wait has not passed, or of a failed probe (then
//!   for the longer of the hint and the open time `backoff` grows to, never their sum). A hint
//!   alone never opens a closed breaker: the rule decides. See [`Breaker::call_hinted`];
//!   `#[breaker]` reads hints by itself, and the `tower` layer reads `Retry-After` headers.
//! * While a time limit applies, the body reads its deadline with [`crate::deadline`].
//! * `capacity = c` sets `error_timeout = timeout * c / (1 - c)`: a worker that keeps probing a
//!   dead endpoint is free a share `c` of the time.
//! * An outcome counts in the state the call was admitted in: a call admitted while closed that
//!   finishes after the breaker opened only moves the "last error" time.
//! * Opening by its rule (errors or slow calls) clears the window, so that the breaker closes
//!   with a clean one: an open breaker's [`Snapshot`] reports 0 `recent_errors`, 0
//!   `recent_calls` (rate rule) and 0 `recent_slow`, where resilience4j keeps the window's counts
//!   while open. A call admitted before the breaker opened, was reset or changed rule (count to
//!   rate or back) counts in no window after (its error still moves the "last error" time).
//!   [`Breaker::force_open`] leaves the window as it is.
//!
//! ```
//! use resiliency::breaker::{Breaker, State};
//!
//! type BoxError = Box<dyn std::error::Error + Send + Sync>;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let breaker = Breaker::builder("docs-open-window")
//!     .failure_rate(0.5)
//!     .min_calls(4)
//!     .build()
//!     .unwrap();
//! for fail in [false, false, true, true] {
//!     let call = breaker.call(async move { if fail { Err::<(), BoxError>("down".into()) } else { Ok(()) } });
//!     let _ = call.await;
//! }
//! let snapshot = breaker.snapshot();
//! assert_eq!(snapshot.state, State::Open);
//! // The 4 calls and 2 errors that opened it are gone from the window.
//! assert_eq!((snapshot.recent_calls, snapshot.recent_errors), (Some(0), 0));
//! # }
//! ```
//! * `RESILIENCY_DISABLED=1` (or `true`, `yes`, `on`, in any case) in the environment makes every
//!   breaker pass calls through.
//!
//! # Slow calls
//!
//! A call slower than `slow_call_duration` is not cancelled, and its result is returned; it is
//! measured from the body's first wait (from its start for a blocking call), so a call that
//! answers on its first poll is never slow. What it counts for depends on the rule:
//!
//! * Under the count rule, a slow call is an error. Semian counts failures within a window, and
//!   a slow call is the failure a worker pays for: it holds the worker as long as a timeout would.
//!   A rate of slow calls would need every call counted, which the count rule does not do.
//! * Under the rate rule without `slow_call_rate`, a slow call is a failed call.
//! * Under the rate rule with `slow_call_rate` (resilience4j's `slowCallRateThreshold`), a slow
//!   success is a success, and the breaker also opens when slow successes reach that share of the
//!   window's calls (with `min_calls`, as errors need).
//!
//! A slow error is an error, counted once, under every rule (resilience4j counts it toward both
//! rates; here the error rate has it already, and the success path stays free of the clock read
//! it would take).
//!
//! A slow probe re-opens the breaker under every rule. [`Snapshot::recent_slow`] counts slow
//! calls apart from errors, and the metrics count a slow success as outcome `slow` (never
//! `error`).
//!
//! ```
//! use std::time::Duration;
//! use resiliency::breaker::{Breaker, State};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let breaker = Breaker::builder("docs-slow-rate")
//!     .failure_rate(0.5)
//!     .min_calls(4)
//!     .slow_call_duration(Duration::from_millis(100))
//!     .slow_call_rate(0.75)
//!     .build()
//!     .unwrap();
//! for wait in [10, 200, 200] {
//!     let call = breaker.call(async move {
//!         tokio::time::sleep(Duration::from_millis(wait)).await;
//!         Ok::<_, resiliency::Rejected>(wait)
//!     });
//!     assert_eq!(call.await.unwrap(), wait); // slow calls are not cancelled
//! }
//! let snapshot = breaker.snapshot();
//! assert_eq!((snapshot.recent_errors, snapshot.recent_slow), (0, 2)); // slow, not errors
//! let call = breaker.call(async {
//!     tokio::time::sleep(Duration::from_millis(200)).await;
//!     Ok::<_, resiliency::Rejected>(())
//! });
//! call.await.unwrap();
//! assert_eq!(breaker.state(), State::Open); // 3 slow of 4 calls
//! # }
//! ```
//!
//! # Guarantees
//!
//! Whatever the code around it does, the breaker's own state stays consistent and no slot is
//! lost:
//!
//! * **The body panics**: the call counts as an error (a probe that panics re-opens the breaker;
//!   `count_if` is not asked, there is no error value), and the panic goes on to the caller.
//! * **`count_if` panics**: the error counts as an error, and the panic goes on to the caller.
//! * **A [`RetryHint`](crate::RetryHint) panics** (the error's `retry_after`): the error counts
//!   as an error with no hint (a probe's slot comes back, and it re-opens for its usual open
//!   time), and the panic goes on to the caller.
//! * **The call is dropped** before it was polled, or while its body runs (cancelled, or abandoned
//!   by the caller's own timeout): it counts neither way, and a probe's slot comes back only once
//!   the body has been dropped, so `half_open_calls = 1` never lets two probe bodies live at once.
//! * **A subscriber or a `tracing` layer panics** on a state change: the change stands and the
//!   call goes on; the panic is caught, and only that announcement is lost.
//! * **No time driver**: a breaker without `timeout` runs on any executor (`slow_call_duration`
//!   reads the clock, and needs no timer). With `timeout`, a call
//!   that waits outside a tokio runtime, or on one built without `enable_time`, panics with
//!   tokio's message at its first wait (as `tokio::time::timeout` does) and gives its slot back; a
//!   call that answers on its first poll needs no timer and runs anywhere.
//! * **Blocking calls** ([`Breaker::call_blocking`]) follow the same rules on the caller's thread,
//!   with no runtime needed: a body that panics counts as an error (a probe that panics
//!   re-opens, its slot comes back) and the panic goes on. `timeout` and `half_open_timeout`
//!   cannot interrupt them and do not apply to them.
//! * **Keyed families** never evict a breaker that calls in flight still hold: their outcomes land
//!   on the breaker that the key's later calls use. A lookup racing a sweep, or inserts that copy
//!   the family's table, never gets a breaker the family no longer holds, and concurrent inserts
//!   never take it past `max_keys`. Keys of any text never panic. At most one eviction sweep
//!   waits at a time.
//! * **Settings**: `error_threshold`, `success_threshold` and `half_open_calls` are at most 65535;
//!   the count rule's ring of error times (8 bytes per unit of `error_threshold`) is allocated at a
//!   breaker's first error.
//! * **`RESILIENCY_DISABLED`** accepts `1`, `true`, `yes`, `on` (any case); `0`, `false`, `no`,
//!   `off` or empty leave breakers on, and any other value is reported once as a warning.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use resiliency::breaker::{self, Breaker, State};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let b = Breaker::builder("inventory")
//!     .capacity(0.75)
//!     .timeout(Duration::from_millis(100))
//!     .register()
//!     .unwrap();
//! // A dead endpoint: the call never answers, so it times out and counts as an error.
//! for _ in 0..3 {
//!     let err = b.call(std::future::pending::<Result<(), resiliency::Rejected>>()).await;
//!     assert!(err.unwrap_err().is_timeout());
//! }
//! assert_eq!(b.state(), State::Open);
//! assert_eq!(breaker::get("inventory").unwrap().error_timeout(), Duration::from_millis(300));
//! # }
//! ```

mod admit;
pub(crate) mod blocking;
// The engine type, in the file of its policy's name as in every policy's folder.
#[allow(clippy::module_inception)]
mod breaker;
mod builder;
pub(crate) mod call;
mod disabled;
mod events;
pub mod future;
mod keyed;
#[cfg(feature = "tower")]
pub(crate) mod layer;
#[cfg(all(test, resiliency_loom))]
mod loom;
mod meter;
mod record;
mod registry;
mod settings;
mod window;
mod word;

pub use breaker::{Breaker, Snapshot, State};
pub(crate) use builder::capacity_error_timeout;
pub use builder::BreakerBuilder;
pub use disabled::disabled;
pub use events::{subscribe, unsubscribe, OpenCause, StateChange, SubscriptionId};
pub(crate) use keyed::Key;
pub use keyed::{BreakerKey, KeyedBreaker};
pub use registry::{get, get_keyed, names};
