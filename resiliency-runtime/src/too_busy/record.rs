//! What a guard keeps of its calls once they are over: the `max_in_flight` slot given back, the
//! mean latency `max_latency` refuses on ([`TooBusy::recent_latency`]), and the samples
//! `max_in_flight = "auto"` learns its limit from.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::time::Instant;

use super::adaptive::Verdict;
use super::admission::Held;
use super::in_flight;
use super::meter::Meter;
use super::monitor::nanos;
use super::too_busy::TooBusy;

/// A latency mean older than this no longer refuses calls, so that a function whose calls are all
/// refused lets one through now and then and can learn that it recovered.
pub(super) const LATENCY_HORIZON: Duration = Duration::from_secs(1);
/// Weight of a new latency sample.
const LATENCY_WEIGHT: f64 = 0.2;

impl TooBusy {
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
                name = self.name(),
                limit = verdict.limit,
                ?why,
                no_queue = ?Duration::from_nanos(verdict.baseline_ns),
                "in-flight limit learned"
            );
        }));
    }

    pub(super) fn elapsed_ns(&self) -> u64 {
        self.since_base(Instant::now())
    }

    /// `at` in ns since the guard's first measurement.
    fn since_base(&self, at: Instant) -> u64 {
        let base = *self.base.get_or_init(|| at);
        nanos(at.saturating_duration_since(base))
    }
}
