//! The settings every lag monitor shares: how often it samples ([`set_interval`]), the default
//! `max_lag` ([`set_max_lag`]), the smoothing of samples ([`set_smoothing`]), and the cap on
//! samples that follows the `max_lag` of every guard that names one ([`LagCap`]).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::super::rules::{Recovery, Smoothing};

/// How often a monitor samples the lag until [`set_interval`] changes it, in ms: a macro, so
/// that the code and the docs of [`interval`] read one number.
macro_rules! default_interval_ms {
    () => {
        10
    };
}

/// The `max_lag` of a guard that names no signal until [`set_max_lag`] changes it, in ms
/// (toobusy-js's): a macro, so that the code and the docs of [`max_lag`] read one number.
macro_rules! default_max_lag_ms {
    () => {
        70
    };
}

pub(super) static INTERVAL_NS: AtomicU64 =
    AtomicU64::new(Duration::from_millis(default_interval_ms!()).as_nanos() as u64);
pub(crate) static MAX_LAG_NS: AtomicU64 =
    AtomicU64::new(Duration::from_millis(default_max_lag_ms!()).as_nanos() as u64);
/// The `max_lag` of every guard that names one, by guard: samples are capped at twice the
/// largest (`CAP_BASIS_NS`), so that every guard's lag can reach full refusal (twice its own
/// `max_lag`), and at no more: a guard whose `max_lag` comes down, or that is dropped, takes its
/// part of the cap with it.
static IN_FORCE: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
/// The largest `max_lag` in `IN_FORCE` (0: none).
static CAP_BASIS_NS: AtomicU64 = AtomicU64::new(0);
/// The bit of a [`LagCap`]'s noted `max_lag` that marks it (no `max_lag` reaches 2^63 ns).
const MARK: u64 = 1 << 63;
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

    /// Whether `max_lag_ns` is the `max_lag` this guard has in force in the cap, and the cap is
    /// not [`mark`](Self::mark)ed.
    #[inline(always)]
    pub(crate) fn holds(&self, max_lag_ns: u64) -> bool {
        self.noted_ns.load(Relaxed) == max_lag_ns
    }

    /// Whether `max_lag_ns` is the `max_lag` this guard has in force in the cap, marked or not.
    pub(crate) fn holds_unmarked(&self, max_lag_ns: u64) -> bool {
        self.noted_ns.load(Relaxed) & !MARK == max_lag_ns
    }

    /// Makes [`holds`](Self::holds) false until [`unmark`](Self::unmark), so that calls take
    /// their slow path (the guard's episode of shedding uses it to look for its end at no cost
    /// to the calls of a guard that sheds nothing).
    pub(crate) fn mark(&self) {
        self.noted_ns.fetch_or(MARK, Relaxed);
    }

    pub(crate) fn unmark(&self) {
        self.noted_ns.fetch_and(!MARK, Relaxed);
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
        // The mark stays as it was.
        let _ = self
            .noted_ns
            .fetch_update(Relaxed, Relaxed, |noted| Some(ns | (noted & MARK)));
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
pub(super) fn cap_basis() -> Duration {
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

#[doc = concat!(
    "How often monitors sample the lag: ", default_interval_ms!(), " ms until [`set_interval`] ",
    "changes it."
)]
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

#[doc = concat!(
    "The default `max_lag`, which a guard that names no signal checks the lag against: ",
    default_max_lag_ms!(), " ms (toobusy-js's) until [`set_max_lag`] changes it."
)]
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
