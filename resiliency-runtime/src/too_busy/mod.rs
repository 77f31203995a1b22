//! Load shedding at a handler's entry when the async runtime lags, as toobusy-js does for Node's
//! event loop, plus the signals its users asked for: a cap on calls in flight and the recent mean
//! latency.
//!
//! * A monitor task on the caller's runtime (one per runtime, whatever threads make the calls;
//!   started by the first guarded call, gone with its runtime) sleeps [`interval`], measures
//!   how late it woke, and smooths the samples with [`Smoothing`]:
//!   toobusy-js's exponential smoothing (factor 1/3), by default with the fix of toobusy-js PR #17:
//!   samples capped at `2 * max_lag` (the largest `max_lag` in force) and the inverse factor while
//!   the lag falls, so that one stall does not refuse a burst of healthy requests and recovery is
//!   fast ([`Recovery::Original`] restores toobusy-js's rule).
//! * Under overload the monitor's own timer waits in the run queue behind the work it measures,
//!   so samples come seconds late. Guarded calls therefore also look (now and then, one clock
//!   read) whether the timer is overdue: the overdue time first seen is one sample, as a stall is,
//!   and every interval it stays overdue while calls keep running counts as one more sample; a
//!   late sample that follows a late one, or that calls saw coming, counts the same way. A lone
//!   stall still moves the lag by one capped sample; a runtime that stays behind is seen within a
//!   few intervals.
//! * A guarded call is refused with probability `(lag - max_lag) / max_lag`: 0 at `max_lag`
//!   ([`max_lag()`](max_lag) by default), 1 at twice it; or when `max_in_flight` calls are running; or
//!   while recent calls took longer than `max_latency` on average. Refusals are immediate (no
//!   queueing) and say which signal refused. A signal is on when it is named: a guard with none
//!   checks the lag with the default `max_lag`; one with `max_in_flight` or `max_latency` checks
//!   the lag only when `max_lag` is named too (and starts no monitor otherwise).
//! * `max_in_flight = "auto"` ([`TooBusyBuilder::max_in_flight_auto`]) learns the in-flight limit
//!   from the guard's own calls, for handlers that wait on a dependency with a capacity of its
//!   own while the runtime never lags: see "`max_in_flight = \"auto\"`" below.
//! * [`lag`] reads the current lag; [`on_lag`] registers a callback for lag above a threshold
//!   (toobusy-js's `onLag`). Lag crossings and refusals are `tracing` events (target
//!   `resiliency::too_busy`, the guard named in `name`): each refusal at level debug (with its
//!   `signal`); a guard that starts refusing says so once at level warn ("load shedding
//!   started", with the signal in words: "the runtime lags 120ms (max_lag 50ms)"), and once it
//!   has refused nothing for 10 s, once at level info ("load shedding stopped", with how many
//!   calls it refused and for how long). Refusals closer together than that are one episode, so
//!   a guard that sheds now and then writes two lines, not one per refusal.
//!
//! # `max_in_flight = "auto"`
//!
//! The limit moves once per window of calls (at least 100 ms and twice what calls take; 40
//! calls, or 10 a second later where few come). It reacts to **queueing**: the successful
//! calls' 10th percentile latency (taken with the bounds its rank allows among the window's
//! calls, so that a noisy window shows nothing) rising over what it is when nothing waits, or
//! their mean rising beyond twice its standard error, times the rate at which they complete, is
//! the queue in calls (Little's law). A queue delays fast calls as much as slow ones, while
//! uneven latency (two modes, a lognormal or Pareto tail) leaves a low percentile where it is;
//! failed calls (an `Err` or a 5xx response as [`Refuse::failed`] says, a panic, a call dropped
//! before it finished) never feed the latency, since a fast failure is not a fast dependency.
//!
//! * A queue above a tenth of the limit (at least one call), two windows in a row, cuts the
//!   limit to what the dependency served (calls in flight less the queue, plus a little; never
//!   below a quarter of them). The controller then holds until no call admitted under the old
//!   limit is left, and checks the next window: had the wait been a queue, the cut would have
//!   taken it away at the rate calls complete; a wait that stayed is calls that became slower, and
//!   the limit is set to what the dependency serves at the new latency, now the one to compare
//!   with. A wait that rose well above the one cut on is news (the capacity fell meanwhile) and
//!   is cut on again.
//! * With no queue and calls pressing against the limit (one refused, or as many running as it
//!   allows), it grows: toward the demand (the calls that came, refused ones included; at most 4
//!   times, twice on the first window) until a queue has been seen or while the limit has not
//!   bound for 3 windows; otherwise by a tenth, by half after 3 windows in a row with no queue,
//!   and by one call with a little queue.
//! * Probes find a no-queue latency that was taken while calls queued (a limit that started
//!   above the dependency's capacity): after the first 10 windows that pressed against the limit,
//!   then one in 50, the limit goes to four fifths of the calls in flight for a window that drains
//!   and one that is measured; one that finds the latency lower keeps the lower limit, and probes
//!   again soon at half.
//! * A spike in the share of failed calls (at least 25%, and 20 points above the share usual for
//!   this function) cuts it by a quarter; a steady share moves nothing.
//! * A window whose calls stayed below half the limit never takes it below `auto_initial`.
//!
//! This follows what the anchors and their issue trackers record. A window's mean against the
//! lowest latency seen (a minimum RTT, as Vegas) measures how uneven latency is rather than
//! whether calls queue, and refuses healthy dependencies whose latency is uneven by nature; a
//! short-term against a long-term mean (Gradient2) is noisy on such dependencies. Envoy's
//! adaptive concurrency measures a percentile at pinned low concurrency, and learned to discard
//! samples from calls admitted before its measurement and to measure again after repeated cuts
//! when a dependency became slower for good: here, windows after a cut wait until the calls
//! admitted before it are gone, and every cut is checked. The same learner serves the attribute,
//! [`TooBusy::builder`] and the tower layer.
//!
//! Admission is the fixed limit's: one `fetch_add` against the learned limit, published in the
//! same atomic. A completed call adds its latency to the window's counters (a clock read and a
//! few atomic adds); the call that finds its window over takes the learner's lock without waiting
//! (a call already deciding is left to it), and decides the next limit. Each change is a
//! `tracing` event (debug, target `resiliency::too_busy`, message "in-flight limit learned", with
//! the guard's `name`, the new limit, why, and the no-queue latency), [`TooBusy::in_flight_limit`] reads it, and with the
//! `metrics` feature it is the gauge `resiliency_too_busy_in_flight_limit`.
//!
//! # Guarantees
//!
//! Whatever user code does, the guards and the monitors stay consistent.
//!
//! * **A body that panics.** Its `max_in_flight` slot comes back once the call has been dropped
//!   (by the task or caller that caught the panic), and the time it ran counts toward
//!   `max_latency` as any call's does.
//! * **A call dropped while it runs** (a timeout, a `select!`, an aborted task, a client gone).
//!   Its slot comes back only after its body has been dropped, so no more than `max_in_flight`
//!   bodies exist at once even while one's destructor runs. The time it ran counts toward
//!   `max_latency`, so a dependency so slow that callers give up is shed. A call dropped before
//!   its first poll took no slot.
//! * **A runtime without a time driver** (built without `enable_time`). The lag signal is off on
//!   that runtime, said once by a `tracing` warning (target `resiliency::too_busy`), and
//!   `max_in_flight` and `max_latency` work as anywhere. tokio has
//!   no way to ask whether a runtime has timers, and creating one on such a runtime panics
//!   ("timers are disabled"): the runtime's monitor creates one once and catches that panic,
//!   with the panic hook in place told to skip it, so nothing is printed but the warning. Under `panic = "abort"` that panic cannot be
//!   caught: the first guarded call on such a runtime starts the monitor, whose first poll ends
//!   the process with tokio's message; build the runtimes that run guarded calls with
//!   `enable_time()` (or `enable_all()`).
//! * **An `on_lag` callback that panics.** The panic is caught and reported once per callback
//!   (a `tracing` error); the monitor carries on with its smoothed lag, so shedding stays on. A
//!   `tracing` subscriber that panics does not end the monitor either, and a refusal whose event
//!   panics in the caller keeps no slot. (Under
//!   `panic = "abort"` these panics end the process, as any panic does.)
//! * **A paused clock** (`tokio::time::pause`). `advance` and auto-advance are no lag: a timer
//!   counts as late only as far as the wall clock also passed. A runtime that really stalls while
//!   its clock is paused shows no lag either, since tokio's time stands still meanwhile.
//! * **Threads that come and go** (short-lived threads in `Handle::block_on`, `spawn_blocking`
//!   threads, workers that replace one in `block_in_place`). A runtime has one monitor task,
//!   whatever threads make its guarded calls. A runtime's monitor retires when it shuts down and
//!   is reused by the next, so there are never more monitors than runtimes alive at once.
//! * **`max_in_flight = "auto"`**. A body that panics and a call dropped while it runs give their
//!   slots back and count as failed calls, and the learned limit goes on refusing beyond it. A
//!   window may close in the drop of a call whose body panicked; a `tracing` subscriber or
//!   metrics recorder that panics there loses its event and nothing else, and the process goes
//!   on. The learner reads the clock and sets no timer, so it learns on a runtime without a time
//!   driver as on any. Low load is never refused, and the limit stays within `auto_min` and
//!   `auto_max`.
//! * **Blocking calls** ([`TooBusy::call_blocking`]). `max_in_flight` and `max_latency` apply as
//!   to async calls and a panicking body gives its slot back, with no runtime needed; the lag
//!   is not looked at, so a guard with the lag signal alone admits every blocking call.
//! * **Settings at their extremes.** A `max_lag` or `max_latency` beyond `u64::MAX` nanoseconds
//!   (584 years) is as good as infinite (it does not wrap), and an [`interval`] of
//!   `Duration::MAX` panics nowhere. A `Retry-After` of centuries is `u64::MAX` seconds (the
//!   `axum` feature).

mod adaptive;
mod admission;
#[cfg(feature = "axum")]
mod axum;
mod blocking;
mod builder;
mod episode;
pub mod future;
mod in_flight;
#[cfg(feature = "tower")]
pub(crate) mod layer;
#[cfg(all(test, resiliency_loom))]
mod loom;
mod meter;
mod monitor;
mod record;
mod registry;
mod rules;
mod settings;
// The engine type, in the file of its policy's name as in every policy's folder.
#[allow(clippy::module_inception)]
mod too_busy;

pub use crate::rejected::Signal;
pub use builder::TooBusyBuilder;
pub use monitor::{
    interval, lag, max_lag, on_lag, set_interval, set_max_lag, set_smoothing, smoothing,
};
pub use registry::get;
pub(crate) use registry::set_up;
pub use resiliency_rules::InFlight;
pub use rules::{Recovery, Smoothing};
pub use too_busy::{Refuse, TooBusy};
