//! A monitor's task on its runtime: it sleeps `interval`, measures how late it woke, smooths the
//! sample into the lag guards read ([`Probe`]), and reports it (`tracing`, the lag gauge, the
//! [`on_lag`] callbacks). It retires its monitor when its runtime drops it ([`Alive`]), and on a
//! runtime without a time driver it holds the lag at zero ([`has_time_driver`]).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use super::{
    cap_basis, interval, max_lag, nanos, slots, smoothing, wall_ns, Monitor, NONE, NOT_DUE,
};

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

/// Retires the monitor when its task is dropped (its runtime shut down, or the task panicked).
pub(super) struct Alive {
    pub(super) index: usize,
    pub(super) monitor: &'static Monitor,
    pub(super) epoch: u64,
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

pub(super) async fn run(alive: Alive) {
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
        super::super::meter::lag(lag);
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
