//! A `#[too_busy]` guard: the signals it checks at a call's entry, and the call future.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use super::adaptive::{Adaptive, Verdict};
use super::builder::TooBusyBuilder;
use super::future::TooBusyCall;
use super::in_flight;
use super::meter::{Meter, MeterCell};
use super::monitor::{current_lag_ns, nanos, LagCap, MAX_LAG_NS};
use super::rules::shed_probability;
use crate::random::random;
use crate::rejected::{BusySignal, FromRejected, Reason, Rejected};

/// A return type through which a call can be refused: `Result<T, E>` with `E: From<Rejected>`,
/// and, with the `axum` feature, `axum::response::Response` (a `503 Service Unavailable` with a
/// `Retry-After` header). Implement it for your own response type to guard handlers that return it.
#[diagnostic::on_unimplemented(
    message = "`#[too_busy]` cannot refuse a call through `{Self}`",
    label = "the guard refuses by returning this type",
    note = "supported: `Result<T, E>` with `E: From<resiliency::Rejected>`; with the `axum` feature, `axum::response::Response` and `impl IntoResponse`; or implement `resiliency::too_busy::Refuse`"
)]
pub trait Refuse {
    /// The value a refused call returns.
    fn refused(rejected: Rejected) -> Self;

    /// Whether this output is a failure, for `max_in_flight = "auto"`, whose limit comes down
    /// when the share of failed calls spikes: `Err` for a `Result`, a 5xx status for an axum
    /// `Response`. By default, none is.
    fn failed(&self) -> bool {
        false
    }
}

impl<T, E: FromRejected> Refuse for Result<T, E> {
    fn refused(rejected: Rejected) -> Self {
        Err(E::from(rejected))
    }

    #[inline(always)]
    fn failed(&self) -> bool {
        self.is_err()
    }
}

/// Load shedding at a function's entry: refuses a call when the runtime lags past `max_lag`
/// (probabilistically, as toobusy-js), when `max_in_flight` calls are already running, or when
/// recent calls took longer than `max_latency` on average. What `#[too_busy]` expands to.
///
/// Built from code with [`TooBusy::builder`], which checks the same rules as the attribute.
/// Calls borrow the guard for `'static`, so hold a built one in a `static`
/// (`std::sync::LazyLock`), or leak it (`Box::leak`) when it is built once at start-up:
///
/// ```
/// use std::sync::LazyLock;
/// use std::time::Duration;
/// use resiliency::too_busy::TooBusy;
///
/// static GUARD: LazyLock<TooBusy> =
///     LazyLock::new(|| TooBusy::builder("search").max_in_flight(2).build().unwrap());
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let slow = || GUARD.call(async {
///     tokio::time::sleep(Duration::from_millis(50)).await;
///     Ok::<_, resiliency::Rejected>(())
/// });
/// let (a, b, c) = tokio::join!(slow(), slow(), slow());
/// assert!(a.is_ok() && b.is_ok());
/// assert!(c.unwrap_err().is_too_busy()); // the third was refused at once
///
/// let leaked: &'static TooBusy =
///     Box::leak(Box::new(TooBusy::builder("export").max_latency(Duration::from_secs(2)).build().unwrap()));
/// assert_eq!(leaked.name(), "export");
///
/// let refused = TooBusy::builder("search").max_in_flight(0).build().unwrap_err();
/// assert_eq!(
///     refused.to_string(),
///     "too_busy `search`: `max_in_flight` must be at least 1 (leave it out for no limit), \
///      e.g. `max_in_flight = 256`, or `max_in_flight = \"auto\"` to learn it"
/// );
/// # }
/// ```
pub struct TooBusy {
    name: &'static str,
    /// The settings, as calls read them (and run-time settings change them): `max_lag` and
    /// `max_latency` in ns (at most `u64::MAX`: 584 years), `max_in_flight`; 0 where not set.
    max_lag_ns: AtomicU64,
    max_in_flight: AtomicU32,
    max_latency_ns: AtomicU64,
    /// `max_lag` as the monitors' cap on samples has it.
    lag_cap: LagCap,
    /// `max_in_flight = "auto"`: `max_in_flight` above is the limit `adaptive` learned.
    learning: AtomicBool,
    adaptive: OnceLock<Box<Adaptive>>,
    /// What calls write, on cache lines of its own: the settings above are read by every call
    /// on every thread and should not share a line with counters that other threads write.
    counters: Counters,
    base: OnceLock<Instant>,
    pub(super) metrics: MeterCell,
}

#[repr(align(128))]
struct Counters {
    in_flight: AtomicU32,
    /// Mean latency of recent calls (exponentially weighted), in ns.
    latency_ns: AtomicU64,
    /// When `latency_ns` was last updated, in ns since `base`.
    latency_at: AtomicU64,
}

/// A latency mean older than this no longer refuses calls, so that a function whose calls are all
/// refused lets one through now and then and can learn that it recovered.
const LATENCY_HORIZON: Duration = Duration::from_secs(1);
/// Weight of a new latency sample.
const LATENCY_WEIGHT: f64 = 0.2;

impl TooBusy {
    /// A builder for a guard called `name` (used in messages and events), with the options of
    /// `#[too_busy]`. A signal is on when it is named: with none named, the guard checks the
    /// runtime's lag against the default `max_lag` ([`set_max_lag`](super::set_max_lag), 70 ms
    /// unless changed); naming `max_in_flight` or `max_latency` turns that default off, and
    /// naming `max_lag` turns lag on beside them.
    pub fn builder(name: &'static str) -> TooBusyBuilder {
        TooBusyBuilder {
            name,
            max_lag: None,
            max_in_flight: None,
            max_in_flight_auto: false,
            auto_min: None,
            auto_max: None,
            auto_initial: None,
            max_latency: None,
        }
    }

    /// With no signal: what a guard is made with before its options are put in force
    /// ([`apply`](Self::apply)).
    pub(crate) const fn new(name: &'static str) -> Self {
        TooBusy {
            name,
            max_lag_ns: AtomicU64::new(0),
            max_in_flight: AtomicU32::new(0),
            max_latency_ns: AtomicU64::new(0),
            lag_cap: LagCap::new(),
            learning: AtomicBool::new(false),
            adaptive: OnceLock::new(),
            counters: Counters {
                in_flight: AtomicU32::new(0),
                latency_ns: AtomicU64::new(0),
                latency_at: AtomicU64::new(0),
            },
            base: OnceLock::new(),
            metrics: MeterCell::new(),
        }
    }

    /// Puts checked options in force, keeping the calls in flight and the latency measured.
    pub(crate) fn apply(&self, options: &TooBusyBuilder) {
        self.max_lag_ns.store(setting_ns(options.max_lag), Relaxed);
        self.lag_cap.note(&self.max_lag_ns);
        self.max_latency_ns
            .store(setting_ns(options.max_latency), Relaxed);
        if options.max_in_flight_auto {
            let bounds = options.bounds();
            let adaptive = self
                .adaptive
                .get_or_init(|| Box::new(Adaptive::new(bounds, self.elapsed_ns())));
            let mut control = adaptive.control();
            if self.learning.load(Relaxed) {
                control.rebound(bounds);
            } else {
                drop(control);
                adaptive.restart(bounds, self.elapsed_ns());
                control = adaptive.control();
            }
            let limit = control.published();
            // Under the controller's lock, so that a window closing meanwhile publishes after
            // (and sets the gauge after).
            self.learning.store(true, Relaxed);
            self.max_in_flight.store(limit, Relaxed);
            self.gauge_limit(limit);
        } else {
            let limit = options.max_in_flight.unwrap_or(0);
            match self.adaptive.get() {
                Some(adaptive) => {
                    // Under the controller's lock, so that a window closing meanwhile, of calls
                    // admitted while the limit was learned, neither publishes its limit nor
                    // sets the gauge to it.
                    let _control = adaptive.control();
                    self.learning.store(false, Relaxed);
                    self.max_in_flight.store(limit, Relaxed);
                    self.gauge_limit(limit);
                }
                None => {
                    self.max_in_flight.store(limit, Relaxed);
                    self.gauge_limit(limit);
                }
            }
        }
    }

    /// The in-flight limit in force is `limit` (0: none), for the metrics' gauge.
    #[inline]
    fn gauge_limit(&self, limit: u32) {
        self.meter().limit(limit);
    }

    /// The `max_lag` this guard names, if any (without one, it may use the default: see
    /// [`TooBusy::builder`]).
    pub fn lag_limit(&self) -> Option<Duration> {
        read_ns(&self.max_lag_ns)
    }

    /// The `max_in_flight` in force, if any: with `max_in_flight = "auto"`, the limit learned
    /// so far.
    pub fn in_flight_limit(&self) -> Option<u32> {
        Some(self.max_in_flight.load(Relaxed)).filter(|&n| n > 0)
    }

    /// Whether the in-flight limit is learned (`max_in_flight = "auto"`); then
    /// [`in_flight_limit`](Self::in_flight_limit) reads the limit learned so far.
    pub fn learns_in_flight_limit(&self) -> bool {
        self.learning.load(Relaxed)
    }

    /// The `max_latency` in force, if any.
    pub fn latency_limit(&self) -> Option<Duration> {
        read_ns(&self.max_latency_ns)
    }

    /// The guard's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Calls in flight right now (counted only with `max_in_flight`).
    pub fn in_flight(&self) -> u32 {
        self.counters.in_flight.load(Relaxed)
    }

    /// The mean latency of recent calls (measured only with `max_latency`).
    pub fn recent_latency(&self) -> Duration {
        Duration::from_nanos(self.counters.latency_ns.load(Relaxed))
    }

    /// Runs `body` unless a signal refuses it; a refused call returns `R::refused(Rejected)` at
    /// once, without running the body. An admitted call holds its `max_in_flight` slot until it
    /// completes or, dropped before (cancelled, or its body panicked), until its body has been
    /// dropped; either way the time it ran counts toward `max_latency`.
    pub fn call<F>(&'static self, body: F) -> TooBusyCall<F, F::Output>
    where
        F: Future,
        F::Output: Refuse,
    {
        TooBusyCall::new(self, body)
    }

    /// Admission now, before the body is made (the tower layer's `call`, which must not call its
    /// inner service for a refused request): the call, its body made by `body` once admitted,
    /// or the refusal. Should `body` panic, the slot comes back.
    #[cfg(feature = "tower")]
    #[inline(always)]
    pub(crate) fn admit_now<F>(
        &'static self,
        body: impl FnOnce() -> F,
    ) -> Result<TooBusyCall<F, F::Output>, Rejected>
    where
        F: Future,
        F::Output: Refuse,
    {
        let held = self.admit()?;
        self.meter().admitted(held.slot);
        Ok(TooBusyCall::admitted(self, held, body))
    }

    /// The entry check: `Ok(start)` admits the call (`start` is set when latency is measured).
    /// The common case (the lag signal alone, lag at most `max_lag`) is a few loads and
    /// compares, inlined; everything else is in `admit_slow`.
    #[inline(always)]
    pub(super) fn admit(&self) -> Result<Held, Rejected> {
        let own_lag_ns = self.max_lag_ns.load(Relaxed);
        let limits = self.limits();
        let lag_alone = limits.in_flight == 0 && limits.latency_ns == 0;
        if !lag_alone && own_lag_ns == 0 {
            // Other signals named, lag not: the runtime's lag is not looked at.
            return self.admit_slow(None, 0, limits);
        }
        let (lag_ns, max_lag_ns) = self.lag_and_max(own_lag_ns);
        if lag_alone && lag_ns.is_none_or(|lag| lag <= max_lag_ns) {
            return Ok(Held::NOTHING);
        }
        self.admit_slow(lag_ns, max_lag_ns, limits)
    }

    /// True when the guard admits a call now holding nothing: the lag signal alone, the lag at
    /// most `max_lag`. Such a call has nothing to give back or record when it ends, however it
    /// ends, so its body runs as it is (`#[too_busy]`'s expansion, for a call awaited as it is
    /// made, where now is its first poll). False says nothing of a refusal: the call then asks
    /// at its first poll, as every other call does.
    #[inline(always)]
    pub(crate) fn admits_freely(&self) -> bool {
        let limits = self.limits();
        if limits.in_flight != 0 || limits.latency_ns != 0 {
            return false;
        }
        let (lag_ns, max_lag_ns) = self.lag_and_max(self.max_lag_ns.load(Relaxed));
        let free = lag_ns.is_none_or(|lag| lag <= max_lag_ns);
        if free {
            self.meter().admitted(false);
        }
        free
    }

    /// The runtime's lag now (`None` off a tokio runtime) and the `max_lag` it is held to: the
    /// guard's own (`own_lag_ns`, put in force in the monitors' cap on samples, at twice the
    /// largest in force, should it have changed), or else the process-wide one.
    #[inline(always)]
    fn lag_and_max(&self, own_lag_ns: u64) -> (Option<u64>, u64) {
        let lag_ns = current_lag_ns();
        if !self.lag_cap.holds(own_lag_ns) {
            self.lag_cap.note(&self.max_lag_ns);
        }
        let max_lag_ns = if own_lag_ns != 0 {
            own_lag_ns
        } else {
            MAX_LAG_NS.load(Relaxed)
        };
        (lag_ns, max_lag_ns)
    }

    /// `max_in_flight` and `max_latency` as a call reads them, once.
    #[inline(always)]
    pub(super) fn limits(&self) -> Limits {
        Limits {
            in_flight: self.max_in_flight.load(Relaxed),
            latency_ns: self.max_latency_ns.load(Relaxed),
        }
    }

    #[inline(never)]
    pub(super) fn admit_slow(
        &self,
        lag_ns: Option<u64>,
        max_lag_ns: u64,
        limits: Limits,
    ) -> Result<Held, Rejected> {
        if let Some(lag_ns) = lag_ns {
            let (lag, max_lag) = (
                Duration::from_nanos(lag_ns),
                Duration::from_nanos(max_lag_ns),
            );
            if lag > max_lag && random() < shed_probability(lag, max_lag) {
                return Err(self.refuse(BusySignal::Lag { lag, max_lag }));
            }
        }
        let max_latency_ns = limits.latency_ns;
        if max_latency_ns != 0 {
            let max_latency = Duration::from_nanos(max_latency_ns);
            let mean = self.counters.latency_ns.load(Relaxed);
            if mean > max_latency_ns {
                let fresh = self
                    .elapsed_ns()
                    .saturating_sub(self.counters.latency_at.load(Relaxed))
                    < LATENCY_HORIZON.as_nanos() as u64;
                if fresh {
                    return Err(self.refuse(BusySignal::Latency {
                        mean: Duration::from_nanos(mean),
                        max_latency,
                    }));
                }
            }
        }
        let limit = limits.in_flight;
        let learn = limit > 0 && self.learning.load(Relaxed);
        if limit > 0 && !in_flight::take(&self.counters.in_flight, limit) {
            if let (true, Some(adaptive)) = (learn, self.adaptive.get()) {
                adaptive.refused();
            }
            return Err(self.refuse(BusySignal::InFlight { limit, auto: learn }));
        }
        Ok(Held {
            // Plus one: 0 means "not measured".
            start_ns: if max_latency_ns != 0 || learn {
                self.elapsed_ns() + 1
            } else {
                0
            },
            slot: limit > 0,
            learn,
        })
    }

    /// A call admitted at `start` (see `admit`) is over: it completed, or was dropped (cancelled,
    /// or its body panicked) after its body was dropped. Gives its slot back, and counts the time
    /// it ran toward `max_latency`.
    ///
    /// `failed`: the call failed (its output is a failure, its body panicked, or it was dropped
    /// before it finished), which `max_in_flight = "auto"` learns from.
    #[inline(always)]
    pub(super) fn done(&self, held: Held, failed: bool) {
        if !held.slot && held.start_ns == 0 {
            return;
        }
        self.record(held, failed);
    }

    /// `done` for a call dropped while running: a failure.
    #[cold]
    #[inline(never)]
    pub(super) fn abandoned(&self, held: Held) {
        self.done(held, true);
    }

    fn record(&self, held: Held, failed: bool) {
        // Read before the slot comes back: how many ran with this one.
        let in_flight = if held.learn {
            self.counters.in_flight.load(Relaxed)
        } else {
            0
        };
        if held.slot {
            in_flight::give_back(&self.counters.in_flight);
            self.meter().left();
        }
        if held.start_ns != 0 {
            // One clock read for both the sample and its time.
            let at = self.since_base(Instant::now());
            let sample = at.saturating_sub(held.start_ns - 1) as f64;
            if held.learn {
                self.learn(at.saturating_sub(held.start_ns - 1), in_flight, failed, at);
            }
            self.meter().ran(sample);
            // Measured for `max_in_flight = "auto"` alone: no mean to keep.
            if self.max_latency_ns.load(Relaxed) == 0 {
                return;
            }
            let mean = self.counters.latency_ns.load(Relaxed) as f64;
            let now = at.max(1);
            let last = self.counters.latency_at.load(Relaxed);
            // The first sample, or the first after a quiet horizon (such as the one call let
            // through while refusing), starts the mean afresh: a function that became fast again
            // is admitted again at once.
            let next = if last == 0 || now.saturating_sub(last) >= LATENCY_HORIZON.as_nanos() as u64
            {
                sample
            } else {
                LATENCY_WEIGHT * sample + (1.0 - LATENCY_WEIGHT) * mean
            };
            self.counters.latency_ns.store(next as u64, Relaxed);
            self.counters.latency_at.store(now, Relaxed);
        }
    }

    /// Adds a call to the learner's window; publishes the limit when that closes the window.
    #[inline]
    fn learn(&self, ns: u64, in_flight: u32, failed: bool, at: u64) {
        let Some(adaptive) = self.adaptive.get() else {
            return;
        };
        if let Some(verdict) = adaptive.sample(
            ns,
            in_flight,
            failed,
            at,
            &self.learning,
            &self.max_in_flight,
        ) {
            self.learned(verdict);
        }
    }

    /// A window's verdict, said to tracing and metrics. This may run in the drop of a call whose
    /// body panicked: a subscriber or recorder that panics here loses its event, and nothing
    /// else (the limit is already in force).
    #[cold]
    #[inline(never)]
    fn learned(&self, verdict: Verdict) {
        let Some(why) = verdict.why else {
            return;
        };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(adaptive) = self.adaptive.get().filter(|_| Meter::ON) {
                // Under the controller's lock, as a change of settings sets it: the limit in force
                // then, unless the limit is no longer learned.
                let _control = adaptive.control();
                if self.learning.load(Relaxed) {
                    self.meter().limit(self.max_in_flight.load(Relaxed));
                }
            }
            tracing::debug!(
                target: "resiliency::too_busy",
                guard = self.name(),
                limit = verdict.limit,
                ?why,
                no_queue = ?Duration::from_nanos(verdict.baseline_ns),
                "in-flight limit learned"
            );
        }));
    }

    fn elapsed_ns(&self) -> u64 {
        self.since_base(Instant::now())
    }

    /// `at` in ns since the guard's first measurement.
    fn since_base(&self, at: Instant) -> u64 {
        let base = *self.base.get_or_init(|| at);
        nanos(at.saturating_duration_since(base))
    }

    #[cold]
    fn refuse(&self, signal: BusySignal) -> Rejected {
        self.meter().refused(&signal);
        tracing::debug!(target: "resiliency::too_busy", guard = self.name(), ?signal, "call refused");
        Rejected::new(Reason::TooBusy {
            name: self.name(),
            signal,
        })
    }
}

impl fmt::Debug for TooBusy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TooBusy")
            .field("name", &self.name())
            .field("max_lag", &self.lag_limit())
            .field("max_in_flight", &self.in_flight_limit())
            .field("max_in_flight_auto", &self.learns_in_flight_limit())
            .field("max_latency", &self.latency_limit())
            .finish_non_exhaustive()
    }
}

/// `max_in_flight` and `max_latency` (in ns) as one call read them; 0 where not set.
#[derive(Copy, Clone)]
pub(super) struct Limits {
    pub(super) in_flight: u32,
    pub(super) latency_ns: u64,
}

/// What an admitted call holds until it is over.
#[derive(Copy, Clone, Debug)]
pub(super) struct Held {
    /// Where latency is measured, when it was admitted: ns since the guard's base, plus one
    /// (0: not measured). A number rather than an `Instant`, so that a call's future stays small.
    start_ns: u64,
    /// It took a `max_in_flight` slot (the limit may change while it runs).
    pub(super) slot: bool,
    /// `max_in_flight = "auto"` learns from it.
    pub(super) learn: bool,
}

impl Held {
    const NOTHING: Held = Held {
        start_ns: 0,
        slot: false,
        learn: false,
    };
}

/// A setting's value as a guard holds it: ns, 0 for none (a duration of 0 is 1 ns).
const fn setting_ns(d: Option<Duration>) -> u64 {
    match d {
        Some(d) => {
            let ns = nanos(d);
            if ns == 0 {
                1
            } else {
                ns
            }
        }
        None => 0,
    }
}

fn read_ns(setting: &AtomicU64) -> Option<Duration> {
    Some(setting.load(Relaxed))
        .filter(|&ns| ns > 0)
        .map(Duration::from_nanos)
}
