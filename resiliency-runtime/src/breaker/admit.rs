//! Admission: what a call asks of its breaker before its body runs, and the time limit that
//! applies to it once admitted.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::breaker::{nanos, Breaker};
use super::word::*;
use crate::rejected::{Reason, Rejected};

impl Breaker {
    /// Admits a call now, or says why not. A closed breaker admits with one load of the state
    /// word and no write: the permit is that word, whose flags tell the call whether a timeout
    /// applies and whether its success is recorded. Counts nothing: the caller counts a refusal
    /// when it hands it over.
    // `#[inline]`: without it a closed call makes a call across crates (the attribute's code is
    // compiled in the user's crate): 9 to 11 more instructions per call (breaker benchmark,
    // callgrind).
    #[inline]
    pub(crate) fn admit(&self) -> Result<Permit, Rejected> {
        match self.admit_closed() {
            Some(permit) => Ok(permit),
            None => self.admit_other(),
        }
    }

    /// Admits a call if the breaker is closed (and not forced), with one load of the state word
    /// and no write; `None` in every other state, for [`admit`](Self::admit) to decide.
    #[inline(always)]
    pub(crate) fn admit_closed(&self) -> Option<Permit> {
        // Acquire: a call admitted under the rate rule writes to the window, which must see the
        // clear made before the breaker closed.
        let word = self.state.load(Ordering::Acquire);
        (word & (PHASE | FORCED) == CLOSED).then(|| Permit::closed(word))
    }

    /// Admission in every state but closed: forced, bypassed, open (the first call after the open
    /// time moves to half-open and is its first probe), half-open (a probe, while a slot is free).
    fn admit_other(&self) -> Result<Permit, Rejected> {
        // The full epoch first, then the word: a probe's full epoch is lifted from it.
        let floor = self.epochs.load(Ordering::Acquire);
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            match (word & FORCED, word & PHASE) {
                (BYPASS, _) => return Ok(Permit::BYPASS),
                (FORCED_OPEN, _) => {
                    return Err(Rejected::new(Reason::ForcedOpen {
                        circuit: self.circuit(),
                    }))
                }
                (FORCED_CLOSED, _) => return Ok(Permit::UNCHECKED),
                (_, CLOSED) => return Ok(Permit::closed(word)),
                (_, OPEN) => {
                    let now = self.now();
                    let until = self
                        .last_error
                        .load(Ordering::Acquire)
                        .saturating_add(nanos(self.open_for(word)));
                    if now < until {
                        return Err(Rejected::new(Reason::Open {
                            circuit: self.circuit(),
                            retry_in: Duration::from_nanos(until - now),
                        }));
                    }
                    match self.swap(word, enter(word, HALF_OPEN) + PROBE) {
                        Ok(full) => return Ok(Permit::probe(full)),
                        Err(seen) => word = seen,
                    }
                }
                _ => {
                    if (word & PROBES) / PROBE >= u64::from(self.config.load().half_open_calls) {
                        return Err(Rejected::new(Reason::ProbesBusy {
                            circuit: self.circuit(),
                        }));
                    }
                    match self.state.compare_exchange_weak(
                        word,
                        word + PROBE,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Ok(Permit::probe(lift(floor, epoch(word)))),
                        Err(seen) => word = seen,
                    }
                }
            }
        }
    }

    /// The time limit of a call admitted with `permit`, read when its body first waits: a closed
    /// call's `timeout` if its word says one applies, a probe's `half_open_timeout` (or
    /// `timeout`), a forced-closed call's `timeout`; none for a bypassed call.
    // `#[inline]`: read at every poll of a timed call (for its deadline), from the user's crate.
    #[inline]
    pub(crate) fn limit(&self, permit: Permit) -> Option<Duration> {
        match self.limit_ns(permit) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// The time after which a call admitted with `permit` is slow (`slow_call_duration`), read
    /// when its body first waits: none for a closed call whose word says no time applies, nor
    /// for a forced-closed or bypassed call, which count nothing.
    pub(crate) fn slow_after(&self, permit: Permit) -> Option<Duration> {
        match permit.admitted() {
            Admitted::Closed(word) if word & TIMED == 0 => None,
            Admitted::Closed(_) | Admitted::Probe(_) => read(&self.slow_call_ns),
            Admitted::Unchecked | Admitted::Bypass => None,
        }
    }
}

impl Breaker {
    /// [`limit`](Self::limit) in ns, 0 for none: what a call's deadline counts from its start.
    #[inline(always)]
    pub(crate) fn limit_ns(&self, permit: Permit) -> u64 {
        let ns = |setting: &std::sync::atomic::AtomicU64| setting.load(Ordering::Relaxed);
        if permit.untimed() {
            return 0;
        }
        match permit.admitted() {
            Admitted::Closed(_) | Admitted::Unchecked => ns(&self.timeout_ns),
            Admitted::Probe(_) => match ns(&self.half_open_timeout_ns) {
                0 => ns(&self.timeout_ns),
                ns => ns,
            },
            Admitted::Bypass => 0,
        }
    }
}

/// A setting of time in ns, 0 for none.
fn read(setting: &std::sync::atomic::AtomicU64) -> Option<Duration> {
    match setting.load(Ordering::Relaxed) {
        0 => None,
        ns => Some(Duration::from_nanos(ns)),
    }
}
