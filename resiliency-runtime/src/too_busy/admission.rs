//! A guard's admission: the entry check every call makes (the lag, `max_latency`,
//! `max_in_flight`, in that order; the common case a few loads, inlined), the refusal it gives,
//! and what an admitted call holds until it is over ([`Held`]).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::in_flight;
use super::monitor::{current_lag_ns, MAX_LAG_NS};
use super::record::LATENCY_HORIZON;
use super::rules::shed_probability;
use super::too_busy::TooBusy;
use crate::random::random;
use crate::rejected::{BusySignal, Reason, Rejected};

impl TooBusy {
    /// Admission now, before the body is made (the tower layer's `call`, which must not call its
    /// inner service for a refused request): the call, its body made by `body` once admitted,
    /// or the refusal. Should `body` panic, the slot comes back.
    #[cfg(feature = "tower")]
    #[inline(always)]
    pub(crate) fn admit_now<F>(
        &'static self,
        body: impl FnOnce() -> F,
    ) -> Result<super::future::TooBusyCall<F, F::Output>, Rejected>
    where
        F: std::future::Future,
        F::Output: super::too_busy::Refuse,
    {
        let held = self.admit().map_err(|rejected| self.refused(rejected))?;
        self.meter().admitted(held.slot);
        Ok(super::future::TooBusyCall::admitted(self, held, body))
    }

    /// The entry check: `Ok(held)` admits the call (`held.start_ns` is set when latency is
    /// measured); `Err` is its refusal, not yet counted: the caller counts it with
    /// [`refused`](Self::refused) once it stands (a call that yields to tokio's
    /// budget first asks again, and is counted once). The common case (the lag signal alone,
    /// lag at most `max_lag`) is a few loads and compares, inlined; everything else is in
    /// `admit_slow`.
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
    pub(super) fn lag_and_max(&self, own_lag_ns: u64) -> (Option<u64>, u64) {
        let lag_ns = current_lag_ns();
        // One compare for two rare cases: a `max_lag` not yet in force in the cap, and an
        // episode of shedding under way (which marks the cap, so that calls look for its end).
        if !self.lag_cap.holds(own_lag_ns) {
            self.off_the_lag_cap(own_lag_ns);
        }
        let max_lag_ns = if own_lag_ns != 0 {
            own_lag_ns
        } else {
            MAX_LAG_NS.load(Relaxed)
        };
        (lag_ns, max_lag_ns)
    }

    /// The lag cap's compare failed: an episode of shedding may be over, or `max_lag` not in
    /// force in the cap yet.
    #[cold]
    #[inline(never)]
    fn off_the_lag_cap(&self, own_lag_ns: u64) {
        self.note_admitted();
        if !self.lag_cap.holds_unmarked(own_lag_ns) {
            self.lag_cap.note(&self.max_lag_ns);
        }
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
                return Err(self.refusal(BusySignal::Lag { lag, max_lag }));
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
                    return Err(self.refusal(BusySignal::Latency {
                        mean: Duration::from_nanos(mean),
                        max_latency,
                    }));
                }
            }
        }
        let limit = limits.in_flight;
        let learn = limit > 0 && self.learning.load(Relaxed);
        if limit > 0 && !in_flight::take(&self.counters.in_flight, limit) {
            return Err(self.refusal(BusySignal::InFlight { limit, auto: learn }));
        }
        self.note_admitted();
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

    /// The refusal by `signal`, not yet counted.
    #[cold]
    fn refusal(&self, signal: BusySignal) -> Rejected {
        Rejected::new(Reason::TooBusy {
            name: self.name(),
            signal,
        })
    }

    /// Counts a refusal that stands (the meter, the debug event, the learner of
    /// `max_in_flight = "auto"`, the episode of shedding) and hands it on as the call's error.
    #[cold]
    pub(super) fn refused(&self, rejected: Rejected) -> Rejected {
        if let Some(signal) = rejected.busy_reason() {
            if let (BusySignal::InFlight { auto: true, .. }, Some(adaptive)) =
                (signal, self.adaptive.get())
            {
                adaptive.refused();
            }
            self.meter().refused(signal);
            tracing::debug!(target: "resiliency::too_busy", name = self.name(), ?signal, "call refused");
        }
        self.note_refusal(&rejected);
        rejected
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
    pub(super) start_ns: u64,
    /// It took a `max_in_flight` slot (the limit may change while it runs).
    pub(super) slot: bool,
    /// `max_in_flight = "auto"` learns from it.
    pub(super) learn: bool,
}

impl Held {
    pub(super) const NOTHING: Held = Held {
        start_ns: 0,
        slot: false,
        learn: false,
    };
}
