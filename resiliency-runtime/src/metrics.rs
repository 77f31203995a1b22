//! Counters, gauges and histograms of every breaker, `#[too_busy]` guard and raced function,
//! through the [`metrics`](https://docs.rs/metrics/0.24) facade: install any recorder (the
//! Prometheus exporter `metrics-exporter-prometheus`, StatsD, ...) and the series below appear.
//!
//! ```
//! use metrics_exporter_prometheus::PrometheusBuilder;
//! use resiliency::{Breaker, Rejected};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // The recorder first: a site registers its handles when it is created.
//! let prometheus = PrometheusBuilder::new().install_recorder().unwrap();
//!
//! let breaker = Breaker::builder("inventory").build().unwrap();
//! let _: Result<(), Rejected> = breaker.call(async { Ok(()) }).await;
//!
//! // Calls count per core; `flush` hands the counts to the recorder now rather than within
//! // the export period.
//! resiliency::metrics::flush();
//! let scrape = prometheus.render(); // what a `/metrics` endpoint would serve
//! assert!(scrape.contains(r#"resiliency_breaker_calls_total{name="inventory",outcome="success"} 1"#));
//! assert!(scrape.contains(r#"resiliency_breaker_state{name="inventory",state="closed"} 1"#));
//! # }
//! ```
//!
//! # When handles are made
//!
//! Each site (a breaker's or keyed family's name, a guard's name, a raced function's name) gets
//! one set of handles, registered with the recorder installed at that moment and cached with the
//! site's own counts; a call then only adds to those (no key lookup, no lock, no allocation). So
//! **install the recorder before a site is created**: a breaker's handles are made when the first
//! breaker of its name is built (from code or on the first call of its `#[breaker]` function), a
//! guard's and a raced function's on their first call, and the lag gauge at the lag monitor's
//! first sample.
//! A site created before any recorder was installed keeps `metrics`' no-op handles. Sites of the
//! same name share one set of handles.
//!
//! Series whose labels are all known up front (every outcome, state and signal) are registered
//! with the site, so counters and gauges are exported at zero before the first event (but for
//! the in-flight limit, registered with the guard's first limit); a
//! transition's series and the win series of an attempt number are registered when they first
//! happen, with the recorder installed then.
//!
//! # When values reach the recorder
//!
//! A call does not touch the recorder: it adds to counts the site keeps per core (a few stripes,
//! each on a cache line of its own; a thread adds to its own stripe), so that threads calling
//! one site do not take a shared cache line from each other at every call. An exporter hands
//! the recorder every site's values in bulk: each counter's total (`Counter::absolute`), the
//! in-flight gauge's level (`Gauge::set`), and the durations buffered since its last export
//! (`Histogram::record`, one per sample).
//!
//! * It runs every [`EXPORT_PERIOD`] (1 s of wall-clock time) on a thread of its own, named
//!   `resiliency-metrics`, started with the first site: no value the recorder shows lags the
//!   calls by more than that, on any runtime or none (a runtime without a time driver, a paused
//!   clock, blocking calls on plain threads).
//! * [`flush`] exports everything now, on the calling thread. A scrape without it shows values
//!   at most one period old; call it where they must be exact: in a `/metrics` handler before
//!   rendering, in tests, before the process exits.
//! * A thread whose buffer of durations fills (512 samples per stripe) hands it to the recorder
//!   itself, so the memory a busy histogram holds is bounded.
//! * Every counter is kept this way, transitions and fallbacks included. The gauges moved or set
//!   at a rare event, `resiliency_breaker_state` (at a state change), the in-flight limit and the
//!   lag gauge, reach the recorder at the event itself.
//!
//! A recorder that resets what it has read (`metrics-util`'s debugging recorder does) is given
//! every counter's total and every level again at each export.
//!
//! # Series
//!
//! Every series has the label `name`, the site's name, except the lag gauge. Times are in seconds.
//!
//! | series | type | labels | moves |
//! | --- | --- | --- | --- |
//! | `resiliency_breaker_calls_total` | counter | `name`, `outcome` | once per call through a breaker: `success`; `error` (an error that counts, a body that panicked); `ignored` (an error that `count_if` did not count); `refused` (open, forced open, or all half-open probe slots taken); `timed_out` (past `timeout` or `half_open_timeout`); `slow` (a success past `slow_call_duration`: counted as a failure, or with `slow_call_rate` toward its own rate; never as an `error`) |
//! | `resiliency_breaker_transitions_total` | counter | `name`, `from`, `to` | on every state change of a breaker, as [`breaker::subscribe`](crate::breaker::subscribe) sees them; states `closed`, `open`, `half_open`, `forced_open`, `forced_closed` |
//! | `resiliency_breaker_state` | gauge | `name`, `state` | the number of breakers of that name in that state: 0 or 1 for a single breaker, the number of keys in each state for a keyed family. A breaker counts in `closed` from its creation and moves with each change; it stops counting when it is dropped or evicted from its family |
//! | `resiliency_too_busy_calls_total` | counter | `name`, `outcome` | once per call through a guard: `admitted`, `refused` |
//! | `resiliency_too_busy_refused_total` | counter | `name`, `signal` | once per refusal, by the signal that refused: `lag`, `in_flight`, `latency` |
//! | `resiliency_too_busy_in_flight` | gauge | `name` | calls running through guards with `max_in_flight` (the guards without it do not count their calls) |
//! | `resiliency_too_busy_in_flight_limit` | gauge | `name` | the `max_in_flight` in force: set when the guard is set up or its settings change, and with `max_in_flight = "auto"` at every change of the learned limit. Only for guards with a limit: registered at a guard's first limit, and NaN (no value) while a limit given before is switched off |
//! | `resiliency_too_busy_lag_seconds` | gauge | none | the runtime's smoothed lag, set at every sample of a lag monitor (with several runtimes, each monitor sets it when it samples) |
//! | `resiliency_too_busy_call_duration_seconds` | histogram | `name` | the time each admitted call ran, for guards with `max_latency` (the ones that measure it) |
//! | `resiliency_race_calls_total` | counter | `name`, `outcome` | once per raced call that returns: `success`; `error` (the error of an attempt not worth another, or the last one); `deadline` (the call's `Rejected` for its deadline). A call dropped or ended by a panic is not counted |
//! | `resiliency_race_attempts_total` | counter | `name` | every attempt started, the first included |
//! | `resiliency_race_wins_total` | counter | `name`, `attempt` | once per successful call, by the number of the attempt that won, counted from 1: `"1"` (the first attempt) to `"17"` ([`MAX_RETRIES`](crate::race_retry::MAX_RETRIES) + 1), one more than the number `attempt = n` and `race_retry::numbered` give the body |
//! | `resiliency_race_budget_refused_total` | counter | `name` | every extra attempt the retry budget did not allow |
//! | `resiliency_rate_limit_calls_total` | counter | `name`, `outcome` | once per call through a rate limit: `admitted` (at once), `waited` (admitted after waiting for its permit, `max_wait`), `refused` |
//! | `resiliency_timeout_calls_total` | counter | `name`, `outcome` | once per call under a `#[timeout]` that ends: `completed` (it answered, `Ok` or `Err`, within `total`) or `timed_out`. A call dropped or ended by a panic is not counted |
//! | `resiliency_fallbacks_total` | counter | `name`, `policy`, `cause` | once per fallback taken (`fallback = path` on an attribute): `policy` is the attribute's (`breaker`, `too_busy`, `race_retry`), `cause` is `refused` (the policy refused the call, under the default `fallback_on = "refusals"`) or `error` (any `Err` under `fallback_on = "errors"`, a refusal included). The guarded call itself counts as the policy's refusal or error, never as a success. Registered at the first fallback |
//! | `resiliency_race_attempt_duration_seconds` | histogram | `name` | the time an attempt ran, for each attempt the engine times: every attempt that fails, runs past `each` or panics; and, in the calls whose attempts are timed, the winner and the attempts cancelled (with the time they ran). Attempts are timed in the calls sampled for an `after = "pNN"` percentile, and in every call while attempts are reported ([`race_retry::observe`](crate::race_retry::observe), or a `tracing` subscriber at debug level) |
//!
//! # Keyed families
//!
//! A key is never a label: every breaker of a keyed family is labelled with the family's name
//! alone, and shares the family's handles. A family's calls add up in one set of counters, and
//! `resiliency_breaker_state` says how many of its keys are in each state. Whatever the number of
//! keys, the series are bounded by sites × states (× outcomes, × transitions): per-host breakers
//! over a million hosts export the same handful of series as one breaker.
//!
//! # Guarantees
//!
//! * **A recorder that panics** (registering a handle, or taking an update, on a call's thread,
//!   in an export or a [`flush`]) loses that update and nothing else: the panic is caught, the
//!   policy's state and the call go on as if no recorder were installed, and the exporter goes
//!   on with the next update. A breaker whose recorder panics on every change still opens,
//!   half-opens and closes as its rules say, and handles whose registration panicked are no-ops.
//!   Under `panic = "abort"` such a panic ends the process, as any panic does.
//! * **Cost**: a call adds to its thread's stripe of the site's counts, one atomic add on a cache
//!   line no other core writes, with no lock and no allocation: one for a breaker's outcome, one
//!   for a guard's admission or refusal (plus the in-flight level up and down with
//!   `max_in_flight`), three for a raced call answered by its first attempt. A duration (a guard
//!   with `max_latency`, a timed attempt) is pushed onto the thread's stripe of a buffer, under a
//!   lock only the exporter otherwise takes. Whether a recorder is installed or not, the call
//!   does the same; the exporter's work is once per period per series.
//!   `benches/benches/metrics_cost.rs` measures it on 1 and 2 threads.
//! * **Without the `metrics` feature** nothing of this module is compiled in: no field, no
//!   branch, no dependency.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, LazyLock, Mutex};

mod export;
mod striped;

pub(crate) use export::{enroll, Count, Export, Level, Samples};
pub use export::{flush, EXPORT_PERIOD};
pub(crate) use striped::Striped;

/// Calls through a breaker, by `outcome`: `success`, `error`, `ignored`, `refused`, `timed_out`.
pub const BREAKER_CALLS: &str = "resiliency_breaker_calls_total";
/// Breaker state changes, by `from` and `to`.
pub const BREAKER_TRANSITIONS: &str = "resiliency_breaker_transitions_total";
/// The number of breakers of a name in each `state`.
pub const BREAKER_STATE: &str = "resiliency_breaker_state";
/// Calls through a `#[too_busy]` guard, by `outcome`: `admitted`, `refused`.
pub const TOO_BUSY_CALLS: &str = "resiliency_too_busy_calls_total";
/// Refusals of a guard, by `signal`: `lag`, `in_flight`, `latency`.
pub const TOO_BUSY_REFUSED: &str = "resiliency_too_busy_refused_total";
/// Calls in flight through a guard with `max_in_flight`.
pub const TOO_BUSY_IN_FLIGHT: &str = "resiliency_too_busy_in_flight";
/// The `max_in_flight` of a guard in force (with `max_in_flight = "auto"`, the learned limit).
pub const TOO_BUSY_IN_FLIGHT_LIMIT: &str = "resiliency_too_busy_in_flight_limit";
/// The runtime's smoothed lag, in seconds (no `name` label).
pub const TOO_BUSY_LAG: &str = "resiliency_too_busy_lag_seconds";
/// How long admitted calls of a guard with `max_latency` ran, in seconds.
pub const TOO_BUSY_CALL_DURATION: &str = "resiliency_too_busy_call_duration_seconds";
/// Raced calls, by `outcome`: `success`, `error`, `deadline`.
pub const RACE_CALLS: &str = "resiliency_race_calls_total";
/// Attempts started by raced calls, the first included.
pub const RACE_ATTEMPTS: &str = "resiliency_race_attempts_total";
/// Successful raced calls, by the `attempt` number that won, counted from 1 (`"1"` to `"17"`).
pub const RACE_WINS: &str = "resiliency_race_wins_total";
/// Extra attempts the retry budget refused.
pub const RACE_BUDGET_REFUSED: &str = "resiliency_race_budget_refused_total";
/// How long timed attempts ran, in seconds.
pub const RACE_ATTEMPT_DURATION: &str = "resiliency_race_attempt_duration_seconds";
/// Calls through a `#[rate_limit]`, by `outcome`: `admitted`, `waited`, `refused`.
pub const RATE_LIMIT_CALLS: &str = "resiliency_rate_limit_calls_total";
/// Calls under a `#[timeout]` that ended, by `outcome`: `completed`, `timed_out`.
pub const TIMEOUT_CALLS: &str = "resiliency_timeout_calls_total";
/// Fallbacks taken (`fallback = path` on an attribute), by `policy` and `cause`.
pub const FALLBACKS: &str = "resiliency_fallbacks_total";

/// Runs a recorder call; a panic in it is caught, and loses only that update.
#[inline(always)]
pub(crate) fn quietly(update: impl FnOnce()) {
    let _ = panic::catch_unwind(AssertUnwindSafe(update));
}

/// Registers a handle with the recorder; a registration that panics gives `fallback`'s no-op.
pub(crate) fn register<T>(make: impl FnOnce() -> T, fallback: impl FnOnce() -> T) -> T {
    panic::catch_unwind(AssertUnwindSafe(make)).unwrap_or_else(|_| fallback())
}

/// One handle set per site name, made once (with `describe`, then `make`), registered with the
/// exporter and shared by every site of that name. Cold: touched when a site is created.
pub(crate) struct Sites<T> {
    map: LazyLock<Mutex<HashMap<Arc<str>, Arc<T>>>>,
}

impl<T: Export + 'static> Sites<T> {
    pub(crate) const fn new() -> Self {
        Sites {
            map: LazyLock::new(|| Mutex::new(HashMap::new())),
        }
    }

    #[cold]
    pub(crate) fn get(
        &self,
        name: &str,
        describe: fn(),
        make: impl FnOnce(&Arc<str>) -> T,
    ) -> Arc<T> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(site) = map.get(name) {
            return site.clone();
        }
        quietly(describe);
        let name: Arc<str> = Arc::from(name);
        let site = Arc::new(make(&name));
        map.insert(name, site.clone());
        enroll(site.clone());
        site
    }
}

/// A site's handles of the series of its name ([`Named::handles`]), made at the site's first use:
/// what a guard or a raced function holds while the `metrics` feature is on.
pub(crate) struct Cell<M>(std::sync::OnceLock<Arc<M>>);

/// Series handles taken by a site's name.
pub(crate) trait Named {
    /// The handles of the sites called `name`.
    fn handles(name: &str) -> Arc<Self>;
}

impl<M: Named> Cell<M> {
    pub(crate) const fn new() -> Self {
        Cell(std::sync::OnceLock::new())
    }

    /// The handles of the site called `name`, taken at the first call.
    #[inline(always)]
    pub(crate) fn get(&self, name: &str) -> &M {
        self.0.get_or_init(|| M::handles(name))
    }
}
