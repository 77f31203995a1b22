//! Raced retries under one deadline, as proposed for Zalando's perron client: a retry does not
//! abort the attempt in flight but races it; the first success wins and the others are cancelled.
//!
//! * Attempt 1 starts at once; attempt k + 1 starts [`After`] after attempt k started while none
//!   has succeeded, or at once when an attempt fails with an error worth another (`retry_if`).
//! * The first `Ok` is returned, and every other attempt is dropped (cancelled) before the call
//!   returns. An error that is not worth another attempt ends the call with that error.
//! * One deadline (`total`) bounds everything: then the call returns `Err(E::from(Rejected))`
//!   ([`Rejected::is_deadline`](crate::Rejected::is_deadline)). `each` bounds one attempt; an
//!   attempt past it has failed. When every attempt failed, the last error is returned.
//! * The attempts run concurrently inside the caller's task: nothing is spawned, so borrowed
//!   arguments and `&self` work. A call whose first attempt answers without waiting allocates
//!   nothing and reads no clock: the call's clock (for `after`, `each` and `total`) starts when
//!   attempt 1 first has to wait, so the synchronous part of its first poll is not counted
//!   (when attempts are reported or their latencies recorded, it starts before that poll).
//! * A budget shared by all calls of the function (Finagle's retry budget) bounds the extra
//!   load: extra attempts may add at most its share of the calls (plus 10 per second).
//! * Every attempt's start, duration and outcome, losers included, is a `tracing` event (target
//!   `resilient::race_retry`, level debug) and, for the caller, what [`observe`] returns.
//!   [`stats`] and [`RaceRetry::stats`] count extra attempts, wins by them, budget refusals and
//!   deadlines.
//!
//! Outside a tokio runtime there are no timers: attempts start only when one fails, and there is
//! no deadline. Inside one, the time driver must be on (`enable_time`, as for
//! `tokio::time::timeout`): a raced call whose first attempt waits panics otherwise. An attempt
//! that fails at the very instant of the deadline loses to it (the call returns the deadline's
//! `Rejected`); one that succeeds then wins.
//!
//! A call dropped by its caller (an outer timeout, `select!`) cancels its attempts with it; they
//! are reported as [`Outcome::Abandoned`].

mod budget;
mod engine;
mod latency;
mod observe;
mod policy;

pub use engine::{Always, Race, Retryable};
pub use observe::{observe, Attempt, Observed, Outcome};
pub use policy::{names, stats, After, RaceRetry, RaceStats, MAX_RETRIES};
