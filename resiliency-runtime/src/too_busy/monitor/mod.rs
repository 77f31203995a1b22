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

mod task;
#[cfg(test)]
mod tests;
mod tuning;

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::Instant;

pub use task::on_lag;
use task::{run, Alive};
use tuning::{cap_basis, INTERVAL_NS};
pub use tuning::{interval, max_lag, set_interval, set_max_lag, set_smoothing, smoothing};
pub(crate) use tuning::{nanos, LagCap, MAX_LAG_NS};

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
/// `max_lag` on: a sixteenth, above the noise of a 1 ms timer wheel for the default `max_lag`.
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
