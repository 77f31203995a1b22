//! The lag monitor: a task on the caller's runtime that sleeps `interval`, measures how late it
//! woke, and keeps the smoothed lag where a guarded call can read it with one load.
//!
//! One monitor per thread that runs guarded calls: on a current-thread runtime that is the
//! runtime itself; on a multi-thread runtime each worker that runs guarded calls starts a probe
//! of its own. tokio may run any probe on any worker, so the probes measure how late the runtime
//! as a whole runs timers: one blocked worker whose work the others can take over does not count
//! as overload, a runtime whose workers are all busy does. A monitor dies with its runtime and is
//! started again, on the caller's runtime, by the next guarded call.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::rules::{Recovery, Smoothing};

/// Default `interval`: how often a monitor samples the lag.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);
/// Default `max_lag` of `#[too_busy]` when the attribute gives none (toobusy-js's 70 ms).
pub const DEFAULT_MAX_LAG: Duration = Duration::from_millis(70);

static INTERVAL_NS: AtomicU64 = AtomicU64::new(DEFAULT_INTERVAL.as_nanos() as u64);
pub(crate) static MAX_LAG_NS: AtomicU64 = AtomicU64::new(DEFAULT_MAX_LAG.as_nanos() as u64);
/// The largest `max_lag` any guard has checked against: samples are capped at twice it, so that
/// every guard's lag can reach full refusal (twice its own `max_lag`).
static CAP_BASIS_NS: AtomicU64 = AtomicU64::new(0);

/// Notes that a guard checks against `max_lag`.
#[inline]
pub(crate) fn note_max_lag(max_lag: Duration) {
    let ns = max_lag.as_nanos() as u64;
    if ns > CAP_BASIS_NS.load(Relaxed) {
        CAP_BASIS_NS.fetch_max(ns, Relaxed);
    }
}

/// The `max_lag` that samples are capped by (at twice it).
fn cap_basis() -> Duration {
    Duration::from_nanos(CAP_BASIS_NS.load(Relaxed).max(MAX_LAG_NS.load(Relaxed)))
}
/// The smoothing factor's bits (f64), 0 meaning the default (1/3).
static FACTOR_BITS: AtomicU64 = AtomicU64::new(0);
/// 0: fast recovery (the default), 1: toobusy-js's original.
static RECOVERY: AtomicU8 = AtomicU8::new(0);

/// Sets how often monitors sample the lag (toobusy-js's `interval`). Applies from each monitor's
/// next sample. Values below 1 ms are raised to 1 ms (tokio's timer resolution).
pub fn set_interval(interval: Duration) {
    let interval = interval.max(Duration::from_millis(1));
    INTERVAL_NS.store(interval.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
}

/// How often monitors sample the lag.
pub fn interval() -> Duration {
    Duration::from_nanos(INTERVAL_NS.load(Relaxed))
}

/// Sets the `max_lag` that `#[too_busy]` uses when the attribute gives none, and that monitors cap
/// samples by (at twice it) under [`Recovery::Fast`]. Zero is ignored.
pub fn set_max_lag(max_lag: Duration) {
    if !max_lag.is_zero() {
        MAX_LAG_NS.store(max_lag.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }
}

/// The default `max_lag`.
pub fn max_lag() -> Duration {
    Duration::from_nanos(MAX_LAG_NS.load(Relaxed))
}

/// Sets how monitors smooth their samples (factor and recovery mode).
pub fn set_smoothing(smoothing: Smoothing) {
    FACTOR_BITS.store(smoothing.factor().to_bits(), Relaxed);
    RECOVERY.store(
        u8::from(smoothing.recovery() == Recovery::Original),
        Relaxed,
    );
}

/// How monitors smooth their samples.
pub fn smoothing() -> Smoothing {
    let recovery = if RECOVERY.load(Relaxed) == 1 {
        Recovery::Original
    } else {
        Recovery::Fast
    };
    let bits = FACTOR_BITS.load(Relaxed);
    let factor = if bits == 0 {
        Smoothing::default().factor()
    } else {
        f64::from_bits(bits)
    };
    Smoothing::new(factor, recovery).unwrap_or_default()
}

pub(crate) struct Monitor {
    /// The smoothed lag in ns; `DEAD` while no task of this monitor runs.
    lag_ns: AtomicU64,
}

/// `lag_ns` of a monitor whose runtime is gone (or not started yet).
const DEAD: u64 = u64::MAX;

/// Every monitor: one per thread that ran guarded calls, kept for the process's life and reused
/// by the next runtime on that thread.
static MONITORS: Mutex<Vec<&'static Monitor>> = Mutex::new(Vec::new());

type LagCallback = Arc<dyn Fn(Duration) + Send + Sync>;
static ON_LAG: RwLock<Vec<(Duration, LagCallback)>> = RwLock::new(Vec::new());

/// Calls `callback` with the smoothed lag after every sample at or above `threshold`
/// (toobusy-js's `onLag`), from the monitor's task. Keep it short.
pub fn on_lag<F>(threshold: Duration, callback: F)
where
    F: Fn(Duration) + Send + Sync + 'static,
{
    ON_LAG
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push((threshold, Arc::new(callback)));
}

/// The highest smoothed lag among the running monitors (zero when none runs).
pub fn lag() -> Duration {
    let monitors = MONITORS.lock().unwrap_or_else(|e| e.into_inner());
    let ns = monitors
        .iter()
        .map(|m| m.lag_ns.load(Relaxed))
        .filter(|&ns| ns != DEAD)
        .max()
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

thread_local! {
    static LOCAL: Cell<Option<&'static Monitor>> = const { Cell::new(None) };
}

/// The smoothed lag (ns) seen by this thread's monitor, starting one on the current tokio runtime
/// if none runs (or it died with its runtime). `None` outside a tokio runtime.
#[inline(always)]
pub(crate) fn current_lag_ns() -> Option<u64> {
    if let Some(monitor) = LOCAL.with(Cell::get) {
        let ns = monitor.lag_ns.load(Relaxed);
        if ns != DEAD {
            return Some(ns);
        }
    }
    start()
}

#[inline(never)]
fn start() -> Option<u64> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let monitor = LOCAL.with(Cell::get).unwrap_or_else(|| {
        let monitor: &'static Monitor = Box::leak(Box::new(Monitor {
            lag_ns: AtomicU64::new(DEAD),
        }));
        MONITORS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(monitor);
        LOCAL.with(|local| local.set(Some(monitor)));
        monitor
    });
    monitor.lag_ns.store(0, Relaxed);
    // The guard that marks the monitor dead travels inside the task, so that a task dropped before
    // it ever ran (its runtime shut down first) marks it dead too.
    drop(handle.spawn(run(Alive(monitor))));
    Some(0)
}

/// Marks the monitor dead when its task is dropped (its runtime shut down).
struct Alive(&'static Monitor);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.lag_ns.store(DEAD, Relaxed);
    }
}

async fn run(alive: Alive) {
    let mut lag = Duration::ZERO;
    let mut above = false;
    loop {
        let due = Instant::now() + interval();
        tokio::time::sleep_until(due).await;
        let sample = Instant::now().saturating_duration_since(due);
        let max_lag = max_lag();
        lag = smoothing().next(lag, sample, cap_basis());
        alive.0.lag_ns.store(lag.as_nanos() as u64, Relaxed);
        tracing::trace!(target: "resilient::too_busy", ?sample, ?lag, "runtime lag sample");
        if (lag > max_lag) != above {
            above = lag > max_lag;
            if above {
                tracing::warn!(target: "resilient::too_busy", ?lag, ?max_lag, "runtime lag above max_lag: shedding load");
            } else {
                tracing::info!(target: "resilient::too_busy", ?lag, ?max_lag, "runtime lag back below max_lag");
            }
        }
        let callbacks: Vec<LagCallback> = ON_LAG
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(threshold, _)| lag >= *threshold)
            .map(|(_, callback)| callback.clone())
            .collect();
        for callback in callbacks {
            callback(lag);
        }
    }
}
