//! The lag monitor: a task on the caller's runtime that sleeps `interval`, measures how late it
//! woke, and keeps the smoothed lag where a guarded call can read it with one load. Now and then a
//! guarded call also looks whether the monitor's timer is overdue (one clock read): every call
//! while the runtime lags (the timer is overdue by an interval, or the lag is past a sixteenth
//! of the default `max_lag`) or while calls come more than a millisecond apart, otherwise after
//! calls that took about a millisecond, at most 64:
//! under overload the monitor's own timer waits in the run queue behind the work it should
//! measure, so a monitor that only sampled would see overload seconds late.
//!
//! One monitor per thread that runs guarded calls: on a current-thread runtime that is the
//! runtime itself; on a multi-thread runtime each worker that runs guarded calls starts a probe
//! of its own. tokio may run any probe on any worker, so the probes measure how late the runtime
//! as a whole runs timers: one blocked worker whose work the others can take over does not count
//! as overload, a runtime whose workers are all busy does. A monitor dies with its runtime and is
//! started again, on the caller's runtime, by the next guarded call.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::rules::{Recovery, Smoothing};

/// Default `interval`: how often a monitor samples the lag.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);
/// Default `max_lag` of `#[too_busy]` when the attribute gives none (toobusy-js's 70 ms).
pub const DEFAULT_MAX_LAG: Duration = Duration::from_millis(70);

static INTERVAL_NS: AtomicU64 = AtomicU64::new(DEFAULT_INTERVAL.as_nanos() as u64);
pub(crate) static MAX_LAG_NS: AtomicU64 = AtomicU64::new(DEFAULT_MAX_LAG.as_nanos() as u64);
/// The largest `max_lag` any guard has checked against: samples are capped at twice it, so that
/// every guard's lag can reach full refusal (twice its own `max_lag`).
static CAP_BASIS_NS: AtomicU64 = AtomicU64::new(0);

/// Notes that a guard checks against `max_lag` (in ns).
#[inline]
pub(crate) fn note_max_lag(ns: u64) {
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

/// `d` in nanoseconds, at most `u64::MAX` (584 years).
pub(crate) const fn nanos(d: Duration) -> u64 {
    let ns = d.as_nanos();
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// Aligned to its own cache lines: each thread writes its monitor's call countdown, and monitors
/// are allocated one after another.
#[repr(align(128))]
pub(crate) struct Monitor {
    /// The lag guards act on, in ns: the probe's smoothed lag, raised by guards that find the
    /// probe's timer overdue; `DEAD` while no task of this monitor runs.
    lag_ns: AtomicU64,
    /// Guarded calls on this monitor's thread until the next look at the probe's timer.
    calls: AtomicU32,
    /// The calls between the last two looks (what `calls` counted down from).
    gap: AtomicU32,
    /// When the last look was, in ns since `base` (`NONE`: not yet).
    looked_ns: AtomicU64,
    /// The probe's own smoothed lag, in ns (what its samples say).
    sampled_ns: AtomicU64,
    /// When the probe's timer is due, in ns since `base`.
    due_ns: AtomicU64,
    /// How overdue the timer was when a guard first found it overdue (`NONE`: not yet).
    first_seen_ns: AtomicU64,
    base: OnceLock<Instant>,
}

impl Monitor {
    /// A monitor not started yet (`DEAD`), its pace unknown.
    fn new() -> Self {
        Monitor {
            lag_ns: AtomicU64::new(DEAD),
            calls: AtomicU32::new(1),
            gap: AtomicU32::new(1),
            looked_ns: AtomicU64::new(NONE),
            sampled_ns: AtomicU64::new(0),
            due_ns: AtomicU64::new(NONE),
            first_seen_ns: AtomicU64::new(NONE),
            base: OnceLock::new(),
        }
    }

    fn since_base(&self, at: Instant) -> u64 {
        let base = *self.base.get_or_init(|| at);
        at.saturating_duration_since(base).as_nanos() as u64
    }

    /// Publishes the next time the probe's timer is due.
    fn arm(&self, due: Instant) {
        self.first_seen_ns.store(NONE, Relaxed);
        self.due_ns.store(self.since_base(due), Relaxed);
    }

    /// The lag to act on now: the probe's smoothed lag, or more if its timer is overdue (the
    /// runtime is too busy to run it), per [`Smoothing::overdue`]. Raises `lag_ns` so that the
    /// calls before the next look act on it too.
    #[cold]
    #[inline(never)]
    fn look(&self, lag_ns: u64) -> u64 {
        let now = self.since_base(Instant::now());
        let due = self.due_ns.load(Relaxed);
        // The next look: at every call while the runtime lags (the timer is overdue by an
        // interval, or the lag is past a sixteenth of `max_lag`), since a loaded runtime can afford
        // a clock read per call; otherwise after as many calls as took about `LOOK_SPACING` of
        // late (a clock read costs more than the rest of the check), at most `LOOK_EVERY`. Calls
        // that come seldom or burn milliseconds each are looked at every time, so the first of a
        // burst of heavy calls already sees the timer go overdue.
        // Before a first look nothing is known of the calls' pace: look again at the next.
        let spent = match self.looked_ns.load(Relaxed) {
            NONE => u64::MAX,
            looked => now.saturating_sub(looked),
        };
        self.looked_ns.store(now, Relaxed);
        let lagging = (now > due && now - due >= INTERVAL_NS.load(Relaxed))
            || lag_ns >= MAX_LAG_NS.load(Relaxed) / LAGGING_SHARE;
        let gap = if lagging {
            1
        } else {
            let per_call = spent / u64::from(self.gap.load(Relaxed).max(1));
            (LOOK_SPACING.as_nanos() as u64 / per_call.max(1)).clamp(1, u64::from(LOOK_EVERY))
                as u32
        };
        self.gap.store(gap, Relaxed);
        self.calls.store(gap, Relaxed);
        if now <= due {
            return lag_ns;
        }
        let sampled = Duration::from_nanos(self.sampled_ns.load(Relaxed));
        let overdue = now - due;
        let first_seen = match self.first_seen_ns.load(Relaxed) {
            NONE => {
                self.first_seen_ns.store(overdue, Relaxed);
                overdue
            }
            seen => seen,
        };
        let lag = smoothing().overdue(
            sampled,
            Duration::from_nanos(first_seen),
            Duration::from_nanos(overdue),
            interval(),
            cap_basis(),
        );
        let ns = (lag.as_nanos() as u64).min(DEAD - 1);
        if ns > lag_ns {
            // Not if the monitor died meanwhile.
            let _ = self.lag_ns.compare_exchange(lag_ns, ns, Relaxed, Relaxed);
            return ns;
        }
        lag_ns
    }
}

/// A runtime lags (and guarded calls look at every call) from this share of the default
/// `max_lag` on: 4.4 ms by default, above the noise of a 1 ms timer wheel.
const LAGGING_SHARE: u64 = 16;
/// How much time a thread's guarded calls may go without a look at the probe's timer, as far as
/// `LOOK_EVERY` allows.
const LOOK_SPACING: Duration = Duration::from_millis(1);
/// The most guarded calls on a thread between two looks at the probe's timer (a clock read).
const LOOK_EVERY: u32 = 64;

/// `lag_ns` of a monitor whose runtime is gone (or not started yet).
const DEAD: u64 = u64::MAX;
/// `due_ns` while no timer is armed, `first_seen_ns` while no guard found it overdue,
/// `looked_ns` before the first look.
const NONE: u64 = u64::MAX;

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

/// The highest lag among the running monitors (zero when none runs): the smoothed lag, or more
/// while a monitor's timer is overdue and guarded calls have seen it (what they act on).
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

/// The lag (ns) this thread's monitor reports, starting one on the current tokio runtime if none
/// runs (or it died with its runtime). Now and then (see `Monitor::look`), also looks whether the
/// monitor's timer is overdue. `None` outside a tokio runtime.
#[inline(always)]
pub(crate) fn current_lag_ns() -> Option<u64> {
    if let Some(monitor) = LOCAL.with(Cell::get) {
        let ns = monitor.lag_ns.load(Relaxed);
        if ns != DEAD {
            // Only this thread's guards count down (a load and a store, no read-modify-write).
            let calls = monitor.calls.load(Relaxed);
            if calls > 1 {
                monitor.calls.store(calls - 1, Relaxed);
                return Some(ns);
            }
            return Some(monitor.look(ns));
        }
    }
    start()
}

#[inline(never)]
fn start() -> Option<u64> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let monitor = LOCAL.with(Cell::get).unwrap_or_else(|| {
        let monitor: &'static Monitor = Box::leak(Box::new(Monitor::new()));
        MONITORS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(monitor);
        LOCAL.with(|local| local.set(Some(monitor)));
        monitor
    });
    // Times are counted from now on (not from the first timer's due time, which is ahead).
    monitor.since_base(Instant::now());
    // Not overdue until the task has armed its first timer; the calls' pace not known yet.
    monitor.calls.store(1, Relaxed);
    monitor.gap.store(1, Relaxed);
    monitor.looked_ns.store(NONE, Relaxed);
    monitor.due_ns.store(NONE, Relaxed);
    monitor.sampled_ns.store(0, Relaxed);
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
    let mut previous = Duration::ZERO;
    let mut above = false;
    loop {
        let due = Instant::now() + interval();
        alive.0.arm(due);
        tokio::time::sleep_until(due).await;
        let sample = Instant::now().saturating_duration_since(due);
        let max_lag = max_lag();
        let first_seen = match alive.0.first_seen_ns.load(Relaxed) {
            NONE => None,
            ns => Some(Duration::from_nanos(ns)),
        };
        lag = smoothing().sampled(lag, previous, sample, first_seen, interval(), cap_basis());
        previous = sample;
        let ns = (lag.as_nanos() as u64).min(DEAD - 1);
        alive.0.due_ns.store(NONE, Relaxed);
        alive.0.sampled_ns.store(ns, Relaxed);
        alive.0.lag_ns.store(ns, Relaxed);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A live monitor (lag 0) whose times count from now.
    fn monitor() -> Monitor {
        let m = Monitor::new();
        m.lag_ns.store(0, Relaxed);
        m.since_base(Instant::now());
        m
    }

    #[test]
    fn frequent_calls_on_a_quiet_runtime_are_looked_at_every_64th_call() {
        let m = monitor();
        m.arm(Instant::now() + Duration::from_secs(60));
        assert_eq!(m.look(0), 0);
        // Two looks in quick succession: calls come far faster than one per `LOOK_SPACING`.
        assert_eq!(m.look(0), 0);
        assert_eq!(m.calls.load(Relaxed), LOOK_EVERY);
    }

    #[test]
    fn seldom_calls_are_looked_at_every_time() {
        let m = monitor();
        m.arm(Instant::now() + Duration::from_secs(60));
        for _ in 0..2 {
            std::thread::sleep(LOOK_SPACING * 2);
            m.look(0);
            assert_eq!(m.calls.load(Relaxed), 1);
        }
    }

    #[test]
    fn a_lagging_runtime_is_looked_at_every_call() {
        // The probe's lag is past a sixteenth of max_lag, its timer not yet due.
        let m = monitor();
        m.arm(Instant::now() + Duration::from_secs(60));
        m.look(0);
        let lag = MAX_LAG_NS.load(Relaxed) / LAGGING_SHARE;
        assert_eq!(m.look(lag), lag);
        assert_eq!(m.calls.load(Relaxed), 1);

        // Its timer overdue by more than an interval: the lag rises, and every call looks.
        let m = monitor();
        m.arm(Instant::now());
        m.look(0);
        std::thread::sleep(interval() * 2);
        assert!(m.look(0) > 0);
        assert_eq!(m.calls.load(Relaxed), 1);
    }
}
