//! Where a call records what its attempts did: the policy's counters ([`RaceRetry::stats`]), its
//! latency histogram (`after = "pNN"`), the retry budget, an `observe` log and
//! `tracing` events.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::time::Instant;

use super::observe::{self, Attempt, Outcome};
use super::race_retry::RaceRetry;
use crate::rejected::{Reason, Rejected};

const TARGET: &str = "resiliency::race_retry";

/// Whether attempts are reported (to an observer, or to a subscriber that may want debug
/// events). The global level hint, not a per-callsite `enabled!`: that one's cached interest can
/// be stale for scoped subscribers on other threads, and a wrong "yes" costs only a clock read.
#[inline]
pub(super) fn reporting() -> bool {
    observe::active() || tracing::level_filters::LevelFilter::current() >= tracing::Level::DEBUG
}

/// Calls whose attempt latencies are recorded: all of the first `ALWAYS_RECORDED` samples, then
/// one call in `RECORD_EVERY` on each thread (the clock reads and the shared histogram's writes
/// are the cost of `after = "pNN"`).
const ALWAYS_RECORDED: u64 = 256;
const RECORD_EVERY: u32 = 8;

/// Opens a call of `policy`: counts it for the budget, and says whether its attempt latencies
/// are recorded. Its attempt 1 is counted once its first poll is over (`Meter::started`, or
/// `answered_at_once`).
#[inline(always)]
pub(super) fn open(policy: &'static RaceRetry) -> bool {
    policy.budget.deposit();
    policy.quantile().is_some() && sampled(policy)
}

/// Whether a call of `policy`, which learns `after` from its latencies, records them.
fn sampled(policy: &RaceRetry) -> bool {
    if !policy.warmed.load(Relaxed) {
        if policy.latencies.samples() < ALWAYS_RECORDED {
            return true;
        }
        policy.warmed.store(true, Relaxed);
    }
    thread_local! {
        static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    CALLS.with(|calls| {
        let n = calls.get().wrapping_add(1);
        calls.set(n);
        n % RECORD_EVERY == 0
    })
}

/// The refusal of a call whose deadline passed (or that ran out of attempts with no error to
/// return) after `attempts` attempts.
pub(super) fn deadline(policy: &RaceRetry, attempts: u32) -> Rejected {
    Rejected::new(Reason::Deadline {
        name: policy.name(),
        total: policy.total(),
        attempts,
    })
}

/// Whole microseconds, for `tracing` fields (saturated at `u64::MAX`).
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// One call's reporter: its policy, whether its latencies are recorded, and when it started.
#[derive(Copy, Clone)]
pub(super) struct Reporter {
    pub(super) policy: &'static RaceRetry,
    pub(super) record: bool,
    pub(super) start: Instant,
}

impl Reporter {
    /// Whether attempts that are cancelled are reported (which reads the clock).
    pub(super) fn timed(self) -> bool {
        self.record || reporting()
    }

    /// Reports an attempt that ended.
    pub(super) fn ended(self, number: u32, started: Instant, now: Instant, outcome: Outcome) {
        let policy = self.policy;
        let elapsed = now.saturating_duration_since(started);
        policy.meter().ran(elapsed);
        if let Some(q) = policy.quantile().filter(|_| self.record) {
            // Losers count with the time they ran (a lower bound): leaving them out would teach the
            // percentile that slow attempts never happen.
            policy.latencies.record(elapsed, q);
        }
        let started = started.saturating_duration_since(self.start);
        // Not while a panic unwinds: a subscriber that panicked then would abort the process.
        if !std::thread::panicking() {
            tracing::debug!(
                target: TARGET,
                name = policy.name(),
                attempt = number,
                started_us = micros(started),
                elapsed_us = micros(elapsed),
                ?outcome,
                "attempt ended"
            );
        }
        if observe::active() {
            observe::report(Attempt {
                name: policy.name(),
                number,
                started,
                elapsed,
                outcome,
            });
        }
    }

    /// Attempt `number` won: counted if it was an extra one.
    pub(super) fn won(self, number: u32) {
        self.policy.meter().won(number);
        if number > 1 {
            self.policy.won_by_extra.fetch_add(1, Relaxed);
        }
    }

    /// An extra attempt starts.
    pub(super) fn extra_started(self) {
        self.policy.extra_attempts.fetch_add(1, Relaxed);
        self.policy.meter().started();
    }

    /// The deadline passed with no attempt successful: counted.
    pub(super) fn count_deadline(self) {
        self.policy.deadlines.fetch_add(1, Relaxed);
        self.policy.meter().failed(true);
    }

    /// The refusal of a call whose deadline passed after `attempts` attempts (counted first with
    /// [`count_deadline`](Self::count_deadline)).
    pub(super) fn deadline_passed(self, attempts: u32) -> Rejected {
        let policy = self.policy;
        tracing::debug!(
            target: TARGET,
            name = policy.name(),
            attempts,
            "deadline passed with no attempt successful"
        );
        deadline(policy, attempts)
    }

    /// The refusal of attempts that ran past `each`.
    pub(super) fn timed_out(self, each: Duration) -> Rejected {
        Rejected::new(Reason::AttemptTimeout {
            name: self.policy.name(),
            each,
        })
    }

    /// Takes the token of attempt `attempt` from the budget at `now`; a refusal is counted.
    pub(super) fn withdraw(self, attempt: u32, now: Instant) -> bool {
        let policy = self.policy;
        if policy.budget.withdraw(policy.since_first(now)) {
            return true;
        }
        policy.budget_refused.fetch_add(1, Relaxed);
        policy.meter().budget_refused();
        tracing::debug!(
            target: TARGET,
            name = policy.name(),
            attempt,
            "retry budget spent: no extra attempt"
        );
        false
    }

    /// Attempt `attempt` waits `wait` after a failure, and starts `starts_in` from now.
    pub(super) fn backing_off(self, attempt: u32, wait: Duration, starts_in: Duration) {
        if std::thread::panicking() {
            return;
        }
        tracing::debug!(
            target: TARGET,
            name = self.policy.name(),
            attempt,
            backoff_us = micros(wait),
            starts_in_us = micros(starts_in),
            "backing off after a failure"
        );
    }

    /// An attempt's error asked callers to wait until `until` (its `RetryHint`): no attempt
    /// starts before.
    pub(super) fn held(self, until: Instant) {
        if std::thread::panicking() {
            return;
        }
        tracing::debug!(
            target: TARGET,
            name = self.policy.name(),
            until_us = micros(until.saturating_duration_since(self.start)),
            "waiting as the upstream asked (Retry-After)"
        );
    }
}
