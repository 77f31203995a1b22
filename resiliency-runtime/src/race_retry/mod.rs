//! Raced retries under one deadline, as proposed for Zalando's perron client: a retry does not
//! abort the attempt in flight but races it; the first success wins and the others are cancelled.
//!
//! * Attempt 1 starts at once; attempt k + 1 starts [`After`] after attempt k started while none
//!   has succeeded, or sooner when an attempt fails with an error worth another (`retry_if`) or
//!   runs past `each`: after a backoff, exponential with full jitter (the call's n-th wait is
//!   uniform in `[0, min(max, base * factor^n))`; by default `base` is a quarter of
//!   `min(after, total)` and `factor` is [`RaceRetryBuilder::backoff_factor`]'s default), but
//!   never later than the staggered start would have started it, and never at or past the
//!   deadline ([`RaceRetryBuilder::backoff`]; [`RaceRetryBuilder::no_backoff`] starts it at once).
//! * [`RaceRetryBuilder::max_attempts_in_flight`] caps the attempts of one call running at once:
//!   an attempt that is due waits until fewer run, and starts no sooner than the rules above
//!   allow. With 1, the race is a plain retry under `total`, each attempt started once the one
//!   before it failed. The slots are the call's own.
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
//! * A budget shared by all calls of the function (Finagle's retry budget), on by default, bounds
//!   the extra load: extra attempts may add at most its share of the calls
//!   ([`RaceRetryBuilder::budget`], which says the default), plus 10 per second so that a
//!   function called rarely can still race ([`RaceRetryBuilder::no_budget`] turns it off). An
//!   attempt takes its token as it starts, not while it waits for a slot. A refused call with no
//!   attempt left running returns the last error at once: a failure's replacement takes its token
//!   when the failure leaves nothing else running, not after its backoff.
//! * Every attempt's start, duration and outcome, losers included, is a `tracing` event (target
//!   `resiliency::race_retry`, level debug, with the policy's `name`, the `attempt` counted from
//!   1 as [`Attempt::number`](Attempt::number) is, and durations in whole microseconds:
//!   `started_us`, `elapsed_us`), as is each backoff (`backoff_us`, `starts_in_us`), and, for the
//!   caller, what [`observe`] returns. [`numbered`] and `#[race_retry(attempt = n)]` count from
//!   0 instead: their attempt 0 is attempt 1 here.
//!   [`stats`] and [`RaceRetry::stats`] count extra attempts, wins by them, budget refusals and
//!   deadlines.
//!
//! An attempt that fails at the very instant of the deadline loses to it (the call returns the
//! deadline's `Rejected`); one that succeeds then wins.
//!
//! # Guarantees
//!
//! Whatever user code does, a [`RaceRetry`]'s state (its budget, [`RaceRetry::stats`], its
//! learned latencies) stays consistent, and every attempt's future is dropped by the time the
//! call's is:
//!
//! * **A panic in an attempt's code** (its body, the closure that makes it, its destructor when it
//!   is cancelled, or `retry_if` on its error) ends the call with that panic, at once: the other
//!   attempts are dropped, [`observe`] reports that attempt as [`Outcome::Panicked`] and the others
//!   as [`Outcome::Abandoned`], the extra attempts that started are counted, and the next call
//!   runs as usual. A [`Race`](future::Race) whose poll panicked is over: polling it again panics at once.
//! * **A call dropped** by its caller at any await point (an outer timeout, `select!`) drops its
//!   attempts then, reported as abandoned; one never polled makes no attempt and counts nothing.
//!   An attempt's destructor that takes long delays the call's return by as long, nothing more.
//! * **The slots of `max_attempts_in_flight`** are a call's own and go with its attempts: an
//!   attempt that ends (an answer, an error, past `each`) frees its slot at once, and a call
//!   dropped or ended by a panic holds none after it; no call ever waits for another's.
//! * **No time driver**: outside a tokio runtime there are no timers: attempts start only when one
//!   fails, at once (there is no timer to back off with), and there is no deadline. On a runtime
//!   without a time driver (no `enable_time`), a call whose attempts answer without waiting (or
//!   fail without waiting, with no backoff) runs; one that has to wait (for an attempt or a
//!   backoff) panics with tokio's "timers are disabled" (as `tokio::time::timeout` does there),
//!   its attempts dropped and the extra ones it started counted.
//! * **An [`observe`] whose future panics**, or that is dropped before it completes, leaves the
//!   thread as it was: later calls are not reported, and an enclosing `observe` keeps its log.
//! * **Extreme settings**: [`RaceRetry::builder`], like the attribute, refuses settings out of
//!   range (`retries` of 0 or above [`MAX_RETRIES`], a budget share outside [[`MIN_BUDGET_SHARE`],
//!   [`MAX_BUDGET_SHARE`]], an `after` or `each` not below `total`, a percentile not strictly
//!   between 0 and 1, a zero duration, a backoff factor below 1 or infinite). Whatever a policy
//!   holds, even past those rules (which no public constructor builds; a policy clamps what it is
//!   given rather than trust it), neither panics nor allocates by its value: a `total`, [`After`] or `each` too long
//!   for an `Instant` (up to `Duration::MAX`) means never, `retries` is at most [`MAX_RETRIES`], a
//!   budget share outside [0.001, 1] is clamped, any [`After::Percentile`] (NaN and infinities
//!   included) learns a delay within `total`, a backoff's base or max of up to `Duration::MAX`
//!   saturates (a wait that ends past the deadline starts nothing), a factor that is NaN or below 1
//!   counts as 1 and an infinite one reaches the max at once, and nothing is spawned.

mod attempts;
mod backoff;
// No `blocking.rs`, unlike the other policies: a race runs its attempts side by side as futures,
// and a blocking fn gives none to race.
mod budget;
mod builder;
mod latency;
#[cfg(feature = "tower")]
pub(crate) mod layer;
mod make;
mod meter;
mod observe;
// The engine type, in the file of its policy's name as in every policy's folder.
#[allow(clippy::module_inception)]
mod race_retry;
mod registry;
mod reporter;
mod retryable;
mod settings;
mod stats;
mod timers;

pub use builder::RaceRetryBuilder;
pub use make::{numbered, MakeAttempt, Numbered};
pub use observe::{observe, Attempt, Observed, Outcome};
pub use race_retry::{After, RaceRetry, MAX_RETRIES};
pub(crate) use registry::set_up;
pub use registry::{get, names, stats};
pub use resiliency_rules::{Backoff, Budget, MAX_BUDGET_SHARE, MIN_BUDGET_SHARE};
pub use stats::RaceRetryStats;

pub mod future;
