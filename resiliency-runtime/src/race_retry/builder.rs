//! [`RaceRetryBuilder`]: a race policy's options, checked against the rules before it is built
//! or registered.

use std::time::Duration;

use super::policy::{After, RaceRetry};
use crate::ConfigError;

/// Builds a [`RaceRetry`] from code, with the options of `#[race_retry(...)]` (each method named
/// like the attribute's argument) and the same rules: [`build`](Self::build) refuses what the
/// attribute refuses at compile time.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct RaceRetryBuilder {
    pub(super) name: &'static str,
    pub(super) retries: Option<u32>,
    pub(super) after: Option<After>,
    pub(super) total: Option<Duration>,
    pub(super) each: Option<Duration>,
    pub(super) budget: Option<f64>,
    pub(super) no_budget: bool,
    pub(super) backoff: Option<Duration>,
    pub(super) backoff_factor: Option<f64>,
    pub(super) backoff_max: Option<Duration>,
    pub(super) no_backoff: bool,
}

impl RaceRetryBuilder {
    /// Extra attempts at most, on top of the first: from 1 to
    /// [`MAX_RETRIES`](super::MAX_RETRIES). Default: 2.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// When the next attempt starts while none has succeeded: a fixed delay below `total`, or a
    /// percentile of recent attempt latencies (a quantile strictly between 0 and 1). Default:
    /// `After::Percentile(0.95)`.
    pub fn after(mut self, after: After) -> Self {
        self.after = Some(after);
        self
    }

    /// The one deadline over every attempt, above zero. Required.
    pub fn total(mut self, total: Duration) -> Self {
        self.total = Some(total);
        self
    }

    /// Bounds each attempt (above zero, below `total`): one that runs longer is cancelled and
    /// counts as failed. Default: none.
    pub fn each(mut self, each: Duration) -> Self {
        self.each = Some(each);
        self
    }

    /// Extra attempts may add at most `share` of the calls' load (plus a floor of 10 per
    /// second), counted over all calls of this function: each call deposits `share` of a token,
    /// each extra attempt takes a whole one, at most 100 tokens are banked, and while deposits
    /// come slower than 10 tokens a second the floor makes up the difference (so that a function
    /// called rarely can still race). From [`MIN_BUDGET_SHARE`](super::MIN_BUDGET_SHARE) to
    /// [`MAX_BUDGET_SHARE`](super::MAX_BUDGET_SHARE); default 0.1 (10%).
    pub fn budget(mut self, share: f64) -> Self {
        self.budget = Some(share);
        self
    }

    /// No budget: every extra attempt that `retries`, `after` and failures call for starts, however
    /// many calls fail (an outage then meets `retries + 1` times its load).
    pub fn no_budget(mut self) -> Self {
        self.no_budget = true;
        self
    }

    /// An attempt that replaces a failed one (an error worth another attempt, or past `each`)
    /// waits a backoff: the call's n-th such wait (n from 0) is uniform in
    /// `[0, min(max, base * factor^n))` (exponential backoff with full jitter). It starts then, or
    /// at the next staggered start (`after`) if that comes first, and not at all at or past the
    /// deadline (`total`): a call with no attempt left running then returns the last error at once.
    /// `base` must be above zero.
    ///
    /// `base` defaults to a quarter of `min(after, total)` (of the `after` learned so far with
    /// [`After::Percentile`]), `factor` ([`backoff_factor`](Self::backoff_factor)) to 2, and
    /// there is no `max` ([`backoff_max`](Self::backoff_max)) but the next staggered start.
    ///
    /// Why these defaults: the wait scales with the call, as a fixed one cannot (perron's retries,
    /// node-retry's defaults, wait 1 s and then 2 s: longer than a 450 ms deadline). `after` is
    /// how long an attempt is expected to take; a quarter of it, doubling, means that with the
    /// default two retries a call whose attempts all fail fast waits at most three quarters of
    /// `after` in all (three eighths on average): a transient error is retried well before the
    /// staggered start would have, while the retries of many failing calls are spread over that
    /// window instead of arriving together. With no staggered start before the deadline
    /// (`after` at or above `total`), `total` sets the scale instead.
    pub fn backoff(mut self, base: Duration) -> Self {
        self.backoff = Some(base);
        self
    }

    /// How much each backoff's bound grows over the previous one: finite and at least 1
    /// (default 2).
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = Some(factor);
        self
    }

    /// The most one backoff may wait, at least `backoff` (default: no bound but the next
    /// staggered start). `Duration::MAX` works (a wait that long never ends before the deadline).
    pub fn backoff_max(mut self, max: Duration) -> Self {
        self.backoff_max = Some(max);
        self
    }

    /// No backoff: an attempt that replaces a failed one starts at once (excludes the other
    /// `backoff` settings).
    pub fn no_backoff(mut self) -> Self {
        self.no_backoff = true;
        self
    }

    /// The raced function, or every rule its options break.
    pub fn build(self) -> Result<RaceRetry, ConfigError> {
        ConfigError::from_violations("race_retry", self.name, self.violations())?;
        let total = self.total.expect("`total` is required by the rules");
        let policy = RaceRetry::new(self.name, 0, After::Percentile(0.95), total);
        policy.apply(&self);
        Ok(policy)
    }

    /// Every rule the options break.
    pub(super) fn violations(&self) -> Vec<resiliency_rules::Violation> {
        let after = self.after.unwrap_or(After::Percentile(0.95));
        resiliency_rules::race_retry(&resiliency_rules::RaceRetryOptions {
            name: Some(self.name),
            retries: self.retries,
            after: Some(match after {
                After::Fixed(d) => resiliency_rules::After::Fixed(d),
                After::Percentile(q) => resiliency_rules::After::Percentile(q),
            }),
            total: self.total,
            each: self.each,
            budget: self.budget,
            no_budget: self.no_budget,
            backoff: self.backoff,
            no_backoff: self.no_backoff,
            backoff_factor: self.backoff_factor,
            backoff_max: self.backoff_max,
            written: &[],
        })
    }
}
