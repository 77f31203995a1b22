//! Load shedding at a handler's entry when the async runtime lags, as toobusy-js does for Node's
//! event loop, plus the signals its users asked for: a cap on calls in flight and the recent mean
//! latency.
//!
//! * A monitor task on the caller's runtime (started by the first guarded call, gone with its
//!   runtime; each worker thread that runs guarded calls adds a probe) sleeps [`interval`] (10 ms
//!   by default), measures how late it woke, and smooths the samples with [`Smoothing`]:
//!   toobusy-js's exponential smoothing (factor 1/3), by default with the fix of toobusy-js PR #17:
//!   samples capped at `2 * max_lag` (the largest `max_lag` in use) and the inverse factor while
//!   the lag falls, so that one stall does not refuse a burst of healthy requests and recovery is
//!   fast ([`Recovery::Original`] restores toobusy-js's rule).
//! * Under overload the monitor's own timer waits in the run queue behind the work it measures,
//!   so samples come seconds late. Guarded calls therefore also look (now and then, one clock
//!   read) whether the timer is overdue: the overdue time first seen is one sample, as a stall is,
//!   and every interval it stays overdue while calls keep running counts as one more sample
//!   ([`Smoothing::overdue`]); a late sample that follows a late one, or that calls saw coming,
//!   counts the same way ([`Smoothing::sampled`]). A lone stall still moves the lag by one capped
//!   sample; a runtime that stays behind is seen within a few intervals.
//! * A guarded call is refused with probability [`shed_probability`]`(lag, max_lag)`: 0 at
//!   `max_lag` (70 ms by default), 1 at twice it; or when `max_in_flight` calls are running; or
//!   while recent calls took longer than `max_latency` on average. Refusals are immediate (no
//!   queueing) and say which signal refused.
//! * [`lag`] reads the current lag; [`on_lag`] registers a callback for lag above a threshold
//!   (toobusy-js's `onLag`). Lag crossings and refusals are `tracing` events (target
//!   `resilient::too_busy`).

#[cfg(feature = "axum")]
mod axum;
mod guard;
mod monitor;
mod rules;

pub use guard::{BusyCall, Refuse, TooBusy};
pub use monitor::{
    interval, lag, max_lag, on_lag, set_interval, set_max_lag, set_smoothing, smoothing,
    DEFAULT_INTERVAL, DEFAULT_MAX_LAG,
};
pub use rules::{shed_probability, Recovery, Smoothing};
