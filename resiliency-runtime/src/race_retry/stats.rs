//! [`RaceRetryStats`]: what a raced function's calls did so far, read from its policy's counters
//! ([`RaceRetry::stats`]; by name, [`stats`](super::stats)).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::race_retry::RaceRetry;

/// What a raced function's calls did so far (see [`RaceRetry::stats`], [`stats`](super::stats)).
#[non_exhaustive]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RaceRetryStats {
    /// Attempts started after the first of their call.
    pub extra_attempts: u64,
    /// Calls answered by an attempt other than the first.
    pub won_by_extra: u64,
    /// Extra attempts the budget did not allow.
    pub budget_refused: u64,
    /// Calls that ran out of time (`total`) with no attempt successful.
    pub deadlines: u64,
    /// Whole extra attempts the budget holds now (with a budget).
    pub budget_balance: f64,
    /// The `after` delay an attempt started now would wait.
    pub after: Duration,
}

impl RaceRetry {
    /// What this function's calls did so far.
    pub fn stats(&self) -> RaceRetryStats {
        RaceRetryStats {
            extra_attempts: self.extra_attempts.load(Relaxed),
            won_by_extra: self.won_by_extra.load(Relaxed),
            budget_refused: self.budget_refused.load(Relaxed),
            deadlines: self.deadlines.load(Relaxed),
            budget_balance: self.budget.balance(),
            after: self.after(),
        }
    }

    /// Attempt latencies seen so far (recorded with `After::Percentile` only).
    pub fn latency_samples(&self) -> u64 {
        self.latencies.samples()
    }
}
