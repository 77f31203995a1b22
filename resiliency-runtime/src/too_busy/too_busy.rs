//! [`TooBusy`]: a guard's settings as its calls read them (and run-time settings change them), what
//! its state says ([`TooBusy::in_flight`], [`TooBusy::recent_latency`], ...), its `call`, and
//! [`Refuse`], the return types a call can be refused through. The entry check is in
//! `admission.rs`, what calls leave behind once over in `record.rs`.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use super::adaptive::Adaptive;
use super::builder::TooBusyBuilder;
use super::future::TooBusyCall;
use super::meter::MeterCell;
use super::monitor::{nanos, LagCap};
use crate::rejected::{FromRejected, Rejected};
use resiliency_rules::InFlight;

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
    pub(super) max_lag_ns: AtomicU64,
    pub(super) max_in_flight: AtomicU32,
    pub(super) max_latency_ns: AtomicU64,
    /// `max_lag` as the monitors' cap on samples has it.
    pub(super) lag_cap: LagCap,
    /// `max_in_flight = "auto"`: `max_in_flight` above is the limit `adaptive` learned.
    pub(super) learning: AtomicBool,
    pub(super) adaptive: OnceLock<Box<Adaptive>>,
    /// What calls write, on cache lines of its own: the settings above are read by every call
    /// on every thread and should not share a line with counters that other threads write.
    pub(super) counters: Counters,
    pub(super) base: OnceLock<Instant>,
    pub(super) metrics: MeterCell,
}

#[repr(align(128))]
pub(super) struct Counters {
    pub(super) in_flight: AtomicU32,
    /// Mean latency of recent calls (exponentially weighted), in ns.
    pub(super) latency_ns: AtomicU64,
    /// When `latency_ns` was last updated, in ns since `base`.
    pub(super) latency_at: AtomicU64,
    /// The episode of shedding under way, if any.
    pub(super) episode: super::episode::Episode,
}

impl TooBusy {
    /// A builder for a guard called `name` (used in messages and events), with the options of
    /// `#[too_busy]`. A signal is on when it is named: with none named, the guard checks the
    /// runtime's lag against the default `max_lag` ([`max_lag()`](super::max_lag), which
    /// [`set_max_lag`](super::set_max_lag) changes); naming `max_in_flight` or `max_latency` turns
    /// that default off, and
    /// naming `max_lag` turns lag on beside them.
    pub fn builder(name: &'static str) -> TooBusyBuilder {
        TooBusyBuilder {
            name,
            options: resiliency_rules::TooBusyOptions::default(),
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
                episode: super::episode::Episode::new(),
            },
            base: OnceLock::new(),
            metrics: MeterCell::new(),
        }
    }

    /// Puts checked options in force, keeping the calls in flight and the latency measured.
    pub(crate) fn apply(&self, builder: &TooBusyBuilder) {
        let options = &builder.options;
        self.max_lag_ns.store(setting_ns(options.max_lag), Relaxed);
        self.lag_cap.note(&self.max_lag_ns);
        self.max_latency_ns
            .store(setting_ns(options.max_latency), Relaxed);
        if options.max_in_flight == Some(InFlight::Auto) {
            let bounds = builder.bounds();
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
            let limit = match options.max_in_flight {
                Some(InFlight::Fixed(limit)) => limit,
                _ => 0,
            };
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
