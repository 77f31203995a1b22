//! The lag monitor: a task on the caller's runtime that sleeps `interval`, measures how late it
//! woke, and keeps the smoothed lag where a guarded call can read it with one load. Now and then a
//! guarded call also looks whether the monitor's timer is overdue (one clock read): every call
//! while the runtime lags (the timer is overdue by an interval, or the lag is past a sixteenth
//! of the default `max_lag`) or while calls come more than a millisecond apart, otherwise after
//! calls that took about a millisecond, at most 64:
//! under overload the monitor's own timer waits in the run queue behind the work it should
//! measure, so a monitor that only sampled would see overload seconds late.
//!
//! One monitor per runtime that runs guarded calls, whatever thread makes them (workers, threads
//! in `Handle::block_on`, `spawn_blocking` threads, workers that replace one in
//! `block_in_place`): the first guarded call on a runtime starts its monitor task, later calls on
//! any thread find it by the runtime's id. tokio may run the task on any worker, so it measures
//! how late the runtime as a whole runs timers: one blocked worker whose work the others can take
//! over does not count as overload, a runtime whose workers are all busy does. A monitor retires
//! when its runtime shuts down (its task is dropped) and is reused by the next runtime, so there
//! are never more monitors than runtimes alive at once. Each thread keeps, in a thread-local, the
//! monitor it last used and the `epoch` it saw, and its own pace of looks; a monitor's `epoch`
//! changes when it retires, so a thread whose monitor retired starts or finds another.
//!
//! A runtime built without a time driver cannot run the monitor's timer (tokio panics when one is
//! created, and has no way to ask first): its monitor finds out once, catching that panic with
//! the panic hook told to print nothing for it, says so with one `tracing` warning, and holds the
//! lag at zero until the runtime shuts down.
//!
//! Lateness is measured on tokio's clock and confirmed on the wall clock: under a paused clock
//! (`tokio::time::pause`), `advance` and auto-advance move tokio's time while the runtime runs on
//! time, so a timer is late only as far as real time also passed.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::Instant;

use super::rules::{Recovery, Smoothing};

/// Default `interval`: how often a monitor samples the lag.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);
/// Default `max_lag` of `#[too_busy]` when the attribute gives none (toobusy-js's 70 ms).
pub const DEFAULT_MAX_LAG: Duration = Duration::from_millis(70);

static INTERVAL_NS: AtomicU64 = AtomicU64::new(DEFAULT_INTERVAL.as_nanos() as u64);
pub(crate) static MAX_LAG_NS: AtomicU64 = AtomicU64::new(DEFAULT_MAX_LAG.as_nanos() as u64);
/// The `max_lag` of every guard that names one, by guard: samples are capped at twice the
/// largest (`CAP_BASIS_NS`), so that every guard's lag can reach full refusal (twice its own
/// `max_lag`), and at no more: a guard whose `max_lag` comes down, or that is dropped, takes its
/// part of the cap with it.
static IN_FORCE: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
/// The largest `max_lag` in `IN_FORCE` (0: none).
static CAP_BASIS_NS: AtomicU64 = AtomicU64::new(0);
/// The next guard's key in `IN_FORCE`.
static NEXT_GUARD: AtomicU64 = AtomicU64::new(1);

/// A guard's part in the cap on samples: the `max_lag` it last put in force there (ns; 0: none),
/// under its key (0: none yet). Calls compare their guard's `max_lag` with it (one load), and a
/// `max_lag` that changed is put in force by the first call or change that sees it.
#[derive(Debug)]
pub(crate) struct LagCap {
    key: AtomicU64,
    noted_ns: AtomicU64,
}

impl LagCap {
    pub(crate) const fn new() -> Self {
        LagCap {
            key: AtomicU64::new(0),
            noted_ns: AtomicU64::new(0),
        }
    }

    /// Whether `max_lag_ns` is the `max_lag` this guard has in force in the cap.
    #[inline(always)]
    pub(crate) fn holds(&self, max_lag_ns: u64) -> bool {
        self.noted_ns.load(Relaxed) == max_lag_ns
    }

    /// Puts the guard's `max_lag` (read from `max_lag_ns` under the lock, so that of two changes
    /// noted at once the later stays) in force in the cap, in place of the one it had there.
    #[cold]
    #[inline(never)]
    pub(crate) fn note(&self, max_lag_ns: &AtomicU64) {
        let mut in_force = IN_FORCE.lock().unwrap_or_else(PoisonError::into_inner);
        let ns = max_lag_ns.load(Relaxed);
        let mut key = self.key.load(Relaxed);
        if key == 0 && ns != 0 {
            key = NEXT_GUARD.fetch_add(1, Relaxed);
            self.key.store(key, Relaxed);
        }
        in_force.retain(|&(k, _)| k != key);
        if ns != 0 {
            in_force.push((key, ns));
        }
        settle(&in_force);
        self.noted_ns.store(ns, Relaxed);
    }
}

impl Drop for LagCap {
    fn drop(&mut self) {
        let key = *self.key.get_mut();
        if key != 0 {
            let mut in_force = IN_FORCE.lock().unwrap_or_else(PoisonError::into_inner);
            in_force.retain(|&(k, _)| k != key);
            settle(&in_force);
        }
    }
}

/// Makes the largest `max_lag` in force the cap's basis.
fn settle(in_force: &[(u64, u64)]) {
    let largest = in_force.iter().map(|&(_, ns)| ns).max().unwrap_or(0);
    CAP_BASIS_NS.store(largest, Relaxed);
}

/// The `max_lag` that samples are capped by (at twice it): the largest in force, at least the
/// default's.
fn cap_basis() -> Duration {
    Duration::from_nanos(CAP_BASIS_NS.load(Relaxed).max(MAX_LAG_NS.load(Relaxed)))
}
/// The smoothing factor's bits (f64), 0 meaning the default (1/3).
static FACTOR_BITS: AtomicU64 = AtomicU64::new(0);
/// 0: fast recovery (the default), 1: toobusy-js's original.
static RECOVERY: AtomicU8 = AtomicU8::new(0);

/// Sets how often monitors sample the lag (toobusy-js's `interval`). Applies from each monitor's
/// next sample. Values below 1 ms are raised to 1 ms (tokio's timer resolution); values past
/// `u64::MAX` nanoseconds (584 years) are lowered to it.
pub fn set_interval(interval: Duration) {
    let interval = interval.max(Duration::from_millis(1));
    INTERVAL_NS.store(nanos(interval), Relaxed);
}

/// How often monitors sample the lag.
pub fn interval() -> Duration {
    Duration::from_nanos(INTERVAL_NS.load(Relaxed))
}

/// Sets the `max_lag` that `#[too_busy]` uses when the attribute gives none, and that monitors cap
/// samples by (at twice it) under [`Recovery::Fast`]. Zero is ignored.
pub fn set_max_lag(max_lag: Duration) {
    if !max_lag.is_zero() {
        MAX_LAG_NS.store(nanos(max_lag), Relaxed);
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

/// `at` in ns since the first instant any monitor read, on tokio's clock (negative before it:
/// runtimes with paused clocks each have their own time).
fn tokio_ns(at: Instant) -> i64 {
    static ANCHOR: OnceLock<Instant> = OnceLock::new();
    let anchor = *ANCHOR.get_or_init(|| at);
    match at.checked_duration_since(anchor) {
        Some(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        None => i64::try_from(anchor.duration_since(at).as_nanos()).map_or(i64::MIN, |ns| -ns),
    }
}

/// Now on the wall clock, in ns since the first time any monitor read it.
///
/// The one clock read of this policy that does not go through `tokio::time`, on purpose: under a
/// paused clock (`tokio::time::pause`), `advance` and auto-advance make tokio's time jump while
/// the runtime runs on time, and a timer late on tokio's clock is lag only as far as real time
/// passed too. It is read once per sample, and by a guarded call only when the monitor's timer is
/// overdue on tokio's clock.
fn wall_ns() -> u64 {
    static ANCHOR: OnceLock<std::time::Instant> = OnceLock::new();
    let now = std::time::Instant::now();
    let anchor = *ANCHOR.get_or_init(|| now);
    nanos(now.saturating_duration_since(anchor))
}

/// Aligned to its own cache lines: guarded calls on every thread read it, and monitors are
/// allocated one after another.
#[repr(align(128))]
pub(crate) struct Monitor {
    /// Odd while the monitor runs for a runtime, even while retired; changes (under `SLOTS`'s
    /// lock) at every start and retirement, so that a thread holding it sees that it is no longer
    /// the one it started or found.
    epoch: AtomicU64,
    /// The lag guards act on, in ns: the probe's smoothed lag, raised by guards that find the
    /// probe's timer overdue.
    lag_ns: AtomicU64,
    /// The probe's own smoothed lag, in ns (what its samples say).
    sampled_ns: AtomicU64,
    /// When the probe's timer is due, per [`tokio_ns`] (`NOT_DUE`: no timer armed).
    due_ns: AtomicI64,
    /// When it is due on the wall clock, per [`wall_ns`].
    wall_due_ns: AtomicU64,
    /// How overdue the timer was when a guard first found it overdue (`NONE`: not yet).
    first_seen_ns: AtomicU64,
}

/// What a thread keeps of the monitor it uses: no atomics, nothing shared.
struct Local {
    monitor: Cell<Option<&'static Monitor>>,
    /// The monitor's `epoch` when this thread started or found it.
    epoch: Cell<u64>,
    /// Guarded calls on this thread until the next look at the probe's timer.
    calls: Cell<u32>,
    /// The calls between the last two looks (what `calls` counted down from).
    gap: Cell<u32>,
    /// When this thread last looked, per [`tokio_ns`] (`None`: not yet).
    looked_ns: Cell<Option<i64>>,
}

impl Local {
    const fn new() -> Self {
        Local {
            monitor: Cell::new(None),
            epoch: Cell::new(0),
            calls: Cell::new(1),
            gap: Cell::new(1),
            looked_ns: Cell::new(None),
        }
    }

    /// Uses `monitor`, started or found at `epoch`; the calls' pace not known yet.
    fn set(&self, monitor: &'static Monitor, epoch: u64) {
        self.monitor.set(Some(monitor));
        self.epoch.set(epoch);
        self.calls.set(1);
        self.gap.set(1);
        self.looked_ns.set(None);
    }
}

impl Monitor {
    /// A retired monitor.
    fn new() -> Self {
        Monitor {
            epoch: AtomicU64::new(0),
            lag_ns: AtomicU64::new(0),
            sampled_ns: AtomicU64::new(0),
            due_ns: AtomicI64::new(NOT_DUE),
            wall_due_ns: AtomicU64::new(0),
            first_seen_ns: AtomicU64::new(NONE),
        }
    }

    /// Starts a retired monitor afresh (under `SLOTS`'s lock); returns its new epoch.
    fn restart(&self) -> u64 {
        self.sampled_ns.store(0, Relaxed);
        self.lag_ns.store(0, Relaxed);
        // Not overdue until the task has armed its first timer.
        self.due_ns.store(NOT_DUE, Relaxed);
        self.first_seen_ns.store(NONE, Relaxed);
        let epoch = self.epoch.load(Relaxed) + 1;
        self.epoch.store(epoch, Relaxed);
        epoch
    }

    /// Retires a running monitor (under `SLOTS`'s lock).
    fn retire(&self) {
        self.lag_ns.store(0, Relaxed);
        self.due_ns.store(NOT_DUE, Relaxed);
        self.epoch.store(self.epoch.load(Relaxed) + 1, Relaxed);
    }

    /// Publishes the next time the probe's timer is due, on tokio's clock and on the wall clock.
    fn arm(&self, due: Instant, wall_due: u64) {
        self.first_seen_ns.store(NONE, Relaxed);
        self.wall_due_ns.store(wall_due, Relaxed);
        self.due_ns.store(tokio_ns(due), Relaxed);
    }

    /// The lag to act on now: the probe's smoothed lag, or more if its timer is overdue (the
    /// runtime is too busy to run it), per [`Smoothing::overdue`]. Raises `lag_ns` so that the
    /// calls before the next look act on it too.
    #[cold]
    #[inline(never)]
    fn look(&self, local: &Local, lag_ns: u64) -> u64 {
        let now = tokio_ns(Instant::now());
        // Before a first look nothing is known of the calls' pace: look again at the next.
        let spent = match local.looked_ns.replace(Some(now)) {
            None => u64::MAX,
            Some(looked) => u64::try_from(now.saturating_sub(looked)).unwrap_or(0),
        };
        let due = self.due_ns.load(Relaxed);
        // Overdue on tokio's clock, as far as the wall clock agrees (a paused clock that was
        // advanced is no lag).
        let overdue = if now > due {
            now.abs_diff(due)
                .min(wall_ns().saturating_sub(self.wall_due_ns.load(Relaxed)))
        } else {
            0
        };
        // The next look: at every call while the runtime lags (the timer is overdue by an
        // interval, or the lag is past a sixteenth of `max_lag`), since a loaded runtime can afford
        // a clock read per call; otherwise after as many calls as took about `LOOK_SPACING` of
        // late (a clock read costs more than the rest of the check), at most `LOOK_EVERY`. Calls
        // that come seldom or burn milliseconds each are looked at every time, so the first of a
        // burst of heavy calls already sees the timer go overdue.
        let lagging = overdue >= INTERVAL_NS.load(Relaxed)
            || lag_ns >= MAX_LAG_NS.load(Relaxed) / LAGGING_SHARE;
        let gap = if lagging {
            1
        } else {
            let per_call = spent / u64::from(local.gap.get().max(1));
            (nanos(LOOK_SPACING) / per_call.max(1)).clamp(1, u64::from(LOOK_EVERY)) as u32
        };
        local.gap.set(gap);
        local.calls.set(gap);
        if overdue == 0 {
            return lag_ns;
        }
        let sampled = Duration::from_nanos(self.sampled_ns.load(Relaxed));
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
        let ns = nanos(lag);
        if ns > lag_ns {
            // Not if the probe sampled meanwhile.
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

/// `due_ns` while no timer is armed: never overdue.
const NOT_DUE: i64 = i64::MAX;
/// `first_seen_ns` while no guard found the timer overdue.
const NONE: u64 = u64::MAX;

/// A monitor and the runtime it runs for (`None`: retired, free for the next runtime).
struct Slot {
    monitor: &'static Monitor,
    runtime: Option<Id>,
}

/// Every monitor, kept for the process's life: at most as many as runtimes were alive at once
/// with guarded calls, since a retired monitor is reused before a new one is made.
static SLOTS: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn slots() -> std::sync::MutexGuard<'static, Vec<Slot>> {
    // Nothing panics while holding it (no user code runs under it); poisoned or not, it is whole.
    SLOTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A callback of [`on_lag`].
struct OnLag {
    threshold: Duration,
    callback: Box<dyn Fn(Duration) + Send + Sync>,
    /// Whether a panic of it was reported.
    panicked: AtomicBool,
}

static ON_LAG: RwLock<Vec<Arc<OnLag>>> = RwLock::new(Vec::new());

/// Calls `callback` with the smoothed lag after every sample at or above `threshold`
/// (toobusy-js's `onLag`), from the monitor's task. Keep it short. A callback that panics is
/// caught (the first panic of each is reported with a `tracing` error, target
/// `resiliency::too_busy`): the monitor carries on with its lag, and the callback is called again
/// after the next sample.
pub fn on_lag<F>(threshold: Duration, callback: F)
where
    F: Fn(Duration) + Send + Sync + 'static,
{
    let entry = Arc::new(OnLag {
        threshold,
        callback: Box::new(callback),
        panicked: AtomicBool::new(false),
    });
    ON_LAG
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .push(entry);
}

/// The highest lag among the running monitors (zero when none runs): the smoothed lag, or more
/// while a monitor's timer is overdue and guarded calls have seen it (what they act on).
pub fn lag() -> Duration {
    let ns = slots()
        .iter()
        .filter(|slot| slot.runtime.is_some())
        .map(|slot| slot.monitor.lag_ns.load(Relaxed))
        .max()
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

thread_local! {
    static LOCAL: Local = const { Local::new() };
}

/// The lag (ns) that the monitor of this thread's runtime reports, starting one on the current
/// tokio runtime if none runs (or this thread's retired). Now and then (see `Monitor::look`), also
/// looks whether the monitor's timer is overdue. `None` outside a tokio runtime.
#[inline(always)]
pub(crate) fn current_lag_ns() -> Option<u64> {
    LOCAL.with(|local| {
        if let Some(monitor) = local.monitor.get() {
            if monitor.epoch.load(Relaxed) == local.epoch.get() {
                let ns = monitor.lag_ns.load(Relaxed);
                // Only this thread counts its calls down (a thread-local, nothing shared).
                let calls = local.calls.get();
                if calls > 1 {
                    local.calls.set(calls - 1);
                    return Some(ns);
                }
                return Some(monitor.look(local, ns));
            }
        }
        start(local)
    })
}

#[inline(never)]
fn start(local: &Local) -> Option<u64> {
    let handle = Handle::try_current().ok()?;
    let runtime = handle.id();
    let (index, monitor, epoch, new) = {
        let mut slots = slots();
        match slots.iter().position(|slot| slot.runtime == Some(runtime)) {
            Some(index) => {
                let monitor = slots[index].monitor;
                (index, monitor, monitor.epoch.load(Relaxed), false)
            }
            None => {
                let index = match slots.iter().position(|slot| slot.runtime.is_none()) {
                    Some(index) => index,
                    None => {
                        slots.push(Slot {
                            monitor: Box::leak(Box::new(Monitor::new())),
                            runtime: None,
                        });
                        slots.len() - 1
                    }
                };
                slots[index].runtime = Some(runtime);
                let monitor = slots[index].monitor;
                (index, monitor, monitor.restart(), true)
            }
        }
    };
    local.set(monitor, epoch);
    if new {
        // Spawned with the lock released: on a runtime that is shutting down the task is dropped
        // at once, and `Alive` retires the monitor (taking the lock).
        // The guard that retires the monitor travels inside the task, so that a task dropped
        // before it ever ran (its runtime shut down first) retires it too.
        drop(handle.spawn(run(Alive {
            index,
            monitor,
            epoch,
        })));
    }
    Some(monitor.lag_ns.load(Relaxed))
}

/// Retires the monitor when its task is dropped (its runtime shut down, or the task panicked).
struct Alive {
    index: usize,
    monitor: &'static Monitor,
    epoch: u64,
}

impl Drop for Alive {
    fn drop(&mut self) {
        let mut slots = slots();
        if self.monitor.epoch.load(Relaxed) == self.epoch {
            self.monitor.retire();
            slots[self.index].runtime = None;
        }
    }
}

/// Whether the current runtime has a time driver. tokio has no way to ask: creating a timer
/// without one panics ("timers are disabled"), so this creates one and catches the panic, with
/// the panic hook told to print nothing for it ([`quietly`]). Under `panic = "abort"` that
/// panic ends the process (see the `too_busy` module's docs).
fn has_time_driver() -> bool {
    quietly(|| drop(tokio::time::sleep(Duration::ZERO))).is_some()
}

std::thread_local! {
    /// Set while [`quietly`] runs on this thread: its panic is expected and caught.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, catching a panic, with no panic message printed for it: the panic hook in place is
/// wrapped, for as long as `f` runs, by one that skips panics on this thread and passes every
/// other thread's on; then it is put back as it was.
fn quietly<R>(f: impl FnOnce() -> R) -> Option<R> {
    type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;
    let address = |hook: &Hook| &**hook as *const _ as *const ();
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let passed_on = previous.clone();
    // Not zero-sized (it holds `passed_on`): its address tells it from any other hook.
    let wrapper: Hook = Box::new(move |info| {
        if !QUIET.get() {
            passed_on(info);
        }
    });
    let ours = address(&wrapper);
    std::panic::set_hook(wrapper);
    QUIET.set(true);
    let result = catch_unwind(AssertUnwindSafe(f)).ok();
    QUIET.set(false);
    let current = std::panic::take_hook();
    if address(&current) == ours {
        drop(current);
        if let Ok(previous) = std::sync::Arc::try_unwrap(previous) {
            std::panic::set_hook(previous);
        }
    } else {
        // Another thread set a hook meanwhile: it stays.
        std::panic::set_hook(current);
    }
    result
}

/// The far future when `now + interval` overflows (as tokio's own `sleep` does: 30 years).
fn due_after(now: Instant, interval: Duration) -> Instant {
    now.checked_add(interval)
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now)
}

async fn run(alive: Alive) {
    let monitor = alive.monitor;
    if !has_time_driver() {
        // A subscriber is user code: whatever it does, the monitor holds on.
        let _ = catch_unwind(|| {
            tracing::warn!(
                target: "resiliency::too_busy",
                runtime = %Handle::current().id(),
                "the runtime has no time driver (built without `enable_time`): the lag signal is \
                 off on it; max_in_flight and max_latency still apply"
            )
        });
        // The monitor stays this runtime's, at lag 0, until the runtime shuts down (and drops
        // this task with `alive`), so that no other is started for it.
        return std::future::pending().await;
    }
    let mut probe = Probe::default();
    loop {
        let interval = interval();
        let (armed, wall_armed) = (Instant::now(), wall_ns());
        let due = due_after(armed, interval);
        let wall_due = wall_armed.saturating_add(nanos(interval));
        monitor.arm(due, wall_due);
        tokio::time::sleep_until(due).await;
        // Late on tokio's clock, and as far as the wall clock agrees (a paused clock jumps).
        let late = Instant::now().saturating_duration_since(due);
        let sample = late.min(Duration::from_nanos(wall_ns().saturating_sub(wall_due)));
        let lag = probe.sample(monitor, sample);
        // Subscribers and callbacks are user code: whatever they do, the monitor carries on.
        let _ = catch_unwind(AssertUnwindSafe(|| probe.report(sample, lag)));
    }
}

/// What the monitor's task keeps between samples.
#[derive(Default)]
struct Probe {
    lag: Duration,
    previous: Duration,
    above: bool,
}

impl Probe {
    /// Smooths `sample` into the lag and publishes it.
    fn sample(&mut self, monitor: &Monitor, sample: Duration) -> Duration {
        let first_seen = match monitor.first_seen_ns.load(Relaxed) {
            NONE => None,
            ns => Some(Duration::from_nanos(ns)),
        };
        self.lag = smoothing().sampled(
            self.lag,
            self.previous,
            sample,
            first_seen,
            interval(),
            cap_basis(),
        );
        self.previous = sample;
        let ns = nanos(self.lag);
        monitor.due_ns.store(NOT_DUE, Relaxed);
        monitor.sampled_ns.store(ns, Relaxed);
        monitor.lag_ns.store(ns, Relaxed);
        self.lag
    }

    /// The sample's `tracing` events and the `on_lag` callbacks.
    fn report(&mut self, sample: Duration, lag: Duration) {
        super::meter::lag(lag);
        let max_lag = max_lag();
        tracing::trace!(target: "resiliency::too_busy", ?sample, ?lag, "runtime lag sample");
        if (lag > max_lag) != self.above {
            self.above = lag > max_lag;
            if self.above {
                tracing::warn!(target: "resiliency::too_busy", ?lag, ?max_lag, "runtime lag above max_lag: shedding load");
            } else {
                tracing::info!(target: "resiliency::too_busy", ?lag, ?max_lag, "runtime lag back below max_lag");
            }
        }
        // One at a time, the lock released while each runs (a callback may call `on_lag`).
        for index in 0.. {
            let entry = {
                let callbacks = ON_LAG.read().unwrap_or_else(PoisonError::into_inner);
                match callbacks.get(index) {
                    Some(entry) if lag >= entry.threshold => entry.clone(),
                    Some(_) => continue,
                    None => break,
                }
            };
            let called = catch_unwind(AssertUnwindSafe(|| (entry.callback)(lag)));
            if called.is_err() && !entry.panicked.swap(true, Relaxed) {
                tracing::error!(
                    target: "resiliency::too_busy",
                    threshold = ?entry.threshold,
                    "on_lag callback panicked; the monitor carries on (later panics of this \
                     callback are not reported)"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A running monitor (lag 0) and a thread's view of it.
    fn monitor() -> (&'static Monitor, Local) {
        let m: &'static Monitor = Box::leak(Box::new(Monitor::new()));
        let local = Local::new();
        local.set(m, m.restart());
        (m, local)
    }

    fn arm_in(m: &Monitor, after: Duration) {
        m.arm(Instant::now() + after, wall_ns() + nanos(after));
    }

    /// The lag one stall of `stall` reads as, from a quiet runtime, with the cap in force.
    fn one_stall(stall: Duration) -> Duration {
        let ms = Duration::from_millis;
        Smoothing::default().sampled(Duration::ZERO, ms(1), stall, None, ms(10), cap_basis())
    }

    /// Samples are capped at twice the `max_lag` in force: a guard's `max_lag` raised to 10 s
    /// and set back to 70 ms leaves the cap where 70 ms puts it, so that one 300 ms stall reads
    /// as one sample capped at 140 ms (47 ms of lag, nothing refused), not as 100 ms (43% of
    /// calls refused). Guards of other tests of this crate check at most the default 70 ms.
    #[test]
    fn the_sample_cap_follows_the_max_lag_in_force_both_ways() {
        use crate::settings::{self, Policy};
        use crate::too_busy::TooBusy;
        use crate::Rejected;

        let ms = Duration::from_millis;
        let site = "busy.monitor.cap_follows";
        let guard = TooBusy::builder(site).max_lag(ms(70)).register().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let call = || runtime.block_on(guard.call(async { Ok::<_, Rejected>(()) }));
        call().unwrap();
        assert_eq!(one_stall(ms(300)).as_micros(), 46_666);

        settings::set(Policy::TooBusy, site, "max_lag", "10s").unwrap();
        call().unwrap();
        assert!(cap_basis() >= Duration::from_secs(10), "{:?}", cap_basis());
        assert!(
            one_stall(ms(300)) > ms(99),
            "raised: the stall is not capped"
        );

        settings::set(Policy::TooBusy, site, "max_lag", "70ms").unwrap();
        call().unwrap();
        let lag = one_stall(ms(300));
        assert_eq!(lag.as_micros(), 46_666, "lowered: the cap is 140 ms again");
        assert_eq!(super::super::shed_probability(lag, ms(70)), 0.0);

        settings::unset(Policy::TooBusy, site, "max_lag").unwrap();
    }

    #[test]
    fn frequent_calls_on_a_quiet_runtime_are_looked_at_every_64th_call() {
        let (m, local) = monitor();
        arm_in(m, Duration::from_secs(60));
        assert_eq!(m.look(&local, 0), 0);
        // Two looks in quick succession: calls come far faster than one per `LOOK_SPACING`.
        assert_eq!(m.look(&local, 0), 0);
        assert_eq!(local.calls.get(), LOOK_EVERY);
    }

    #[test]
    fn seldom_calls_are_looked_at_every_time() {
        let (m, local) = monitor();
        arm_in(m, Duration::from_secs(60));
        for _ in 0..2 {
            std::thread::sleep(LOOK_SPACING * 2);
            m.look(&local, 0);
            assert_eq!(local.calls.get(), 1);
        }
    }

    #[test]
    fn a_lagging_runtime_is_looked_at_every_call() {
        // The probe's lag is past a sixteenth of max_lag, its timer not yet due.
        let (m, local) = monitor();
        arm_in(m, Duration::from_secs(60));
        m.look(&local, 0);
        let lag = MAX_LAG_NS.load(Relaxed) / LAGGING_SHARE;
        assert_eq!(m.look(&local, lag), lag);
        assert_eq!(local.calls.get(), 1);

        // Its timer overdue by more than an interval: the lag rises, and every call looks.
        let (m, local) = monitor();
        arm_in(m, Duration::ZERO);
        m.look(&local, 0);
        std::thread::sleep(interval() * 2);
        assert!(m.look(&local, 0) > 0);
        assert_eq!(local.calls.get(), 1);
    }

    #[test]
    fn a_timer_overdue_on_tokios_clock_only_is_not_overdue() {
        // Due 1 s ago on tokio's clock (as after `advance`), not yet on the wall clock.
        let (m, local) = monitor();
        let now = Instant::now();
        let second_ago = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
        m.arm(second_ago, wall_ns() + nanos(Duration::from_secs(60)));
        m.look(&local, 0);
        std::thread::sleep(interval() * 2);
        assert_eq!(m.look(&local, 0), 0);
        assert_eq!(m.first_seen_ns.load(Relaxed), NONE);
    }

    #[test]
    fn runtimes_that_come_and_go_reuse_retired_monitors() {
        let runtimes = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        let before = slots().len();
        for _ in 0..50 {
            let runtime = runtimes();
            runtime.block_on(async {
                assert!(current_lag_ns().is_some());
                tokio::task::yield_now().await; // the monitor task runs
            });
        }
        // Threads that come and go on one runtime share its monitor.
        let shared = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        for _ in 0..100 {
            let handle = shared.handle().clone();
            std::thread::spawn(move || handle.block_on(async { current_lag_ns() }))
                .join()
                .unwrap();
        }
        assert!(slots().len() <= before + 3, "{} monitors", slots().len());
        drop(shared);
        // Two at once, each with its own monitor.
        let (a, b) = (runtimes(), runtimes());
        let a_monitor = a.block_on(async {
            current_lag_ns();
            LOCAL.with(|local| local.monitor.get().map(|m| m as *const Monitor as usize))
        });
        let b_monitor = std::thread::spawn(move || {
            b.block_on(async {
                current_lag_ns();
                LOCAL.with(|local| local.monitor.get().map(|m| m as *const Monitor as usize))
            })
        })
        .join()
        .unwrap();
        assert_ne!(a_monitor, b_monitor);
        // Other tests of this crate may hold a monitor or two meanwhile.
        assert!(slots().len() <= before + 4, "{} monitors", slots().len());
    }
}
