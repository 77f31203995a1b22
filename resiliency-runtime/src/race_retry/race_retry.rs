//! [`RaceRetry`]: one raced function's settings and the state its calls share (the retry budget,
//! its recent latencies, counters); what the counters say is in `stats.rs`.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use tokio::time::Instant;

use super::backoff::Backoff;
use super::budget::Budget;
use super::builder::RaceRetryBuilder;
use super::future::Race;
use super::latency::Latencies;
use super::make::MakeAttempt;
use super::meter::MeterCell;
use super::retryable::{Always, Hinted, Retryable};
use crate::rejected::FromRejected;
use crate::RetryHint;

pub use resiliency_rules::MAX_RETRIES;

use resiliency_rules::{MAX_BUDGET_SHARE, MIN_BUDGET_SHARE};

pub use resiliency_rules::After;

/// A raced function: its settings, and the state all its calls share. What `#[race_retry]`
/// expands to (a `static` in the function), and usable without the macro through
/// [`RaceRetry::builder`], which checks the same rules as the attribute. Calls borrow the policy
/// for `'static`, so hold a built one in a `static` (`std::sync::LazyLock`):
///
/// ```
/// use std::sync::LazyLock;
/// use std::time::Duration;
/// use resiliency::race_retry::{After, RaceRetry};
/// use resiliency::Rejected;
///
/// static FETCH: LazyLock<RaceRetry> = LazyLock::new(|| {
///     RaceRetry::builder("fetch")
///         .retries(2)                                // 3 attempts at most
///         .after(After::Fixed(Duration::from_millis(150)))
///         .total(Duration::from_millis(450))
///         .budget(0.2)                               // extra attempts add at most 20%
///         .backoff(Duration::from_millis(20))        // after a failure, wait up to 20 ms, 40 ms, ...
///         .build()
///         .expect("valid options")
/// });
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let answer: Result<u32, Rejected> = FETCH.run(|| async { Ok(7) }).await;
/// assert_eq!(answer.unwrap(), 7);
/// # }
/// ```
///
/// or leak it (`Box::leak`) when it is built from configuration once at start-up. By default
/// extra attempts may add at most a share of the calls' load (see
/// [`budget`](RaceRetryBuilder::budget)), and an attempt that replaces a failed one waits an
/// exponential backoff with full jitter (see [`backoff`](RaceRetryBuilder::backoff));
/// [`no_budget`](RaceRetryBuilder::no_budget) and [`no_backoff`](RaceRetryBuilder::no_backoff)
/// turn them off:
///
/// ```
/// # use std::time::Duration;
/// # use resiliency::race_retry::{After, RaceRetry};
/// let unbounded: &'static RaceRetry = Box::leak(Box::new(
///     RaceRetry::builder("unbounded")
///         .after(After::Fixed(Duration::from_millis(150)))
///         .total(Duration::from_millis(450))
///         .no_budget()
///         .no_backoff()
///         .build()
///         .unwrap(),
/// ));
/// assert_eq!(unbounded.budget(), None);
/// assert_eq!(unbounded.backoff_bound(0), Duration::ZERO);
///
/// // Options out of range are refused, each with what is valid:
/// let error = RaceRetry::builder("lookup").retries(20).total(Duration::from_millis(450)).build();
/// assert_eq!(
///     error.unwrap_err().to_string(),
///     "race_retry `lookup`: `retries` is the number of extra attempts on top of the first, \
///      from 1 to 16, such as `retries = 2`; each one multiplies the load an outage puts on the callee"
/// );
/// ```
pub struct RaceRetry {
    name: &'static str,
    /// The settings, as calls read them (and run-time settings change them). `after` is a
    /// fixed delay in ns, or a percentile when `quantile_ppb` (the quantile in parts per
    /// billion) is not 0; `each_ns` is 0 without `each`, its ns plus one with it; `u64::MAX`
    /// stands for `Duration::MAX`.
    retries: AtomicU32,
    /// `max_attempts_in_flight`, `u32::MAX` without one.
    slots: AtomicU32,
    after_ns: AtomicU64,
    quantile_ppb: AtomicU64,
    total_ns: AtomicU64,
    each_ns: AtomicU64,
    /// Attempt 1's time limit in ns, 0 for none: the sooner of `total` (none when zero) and
    /// `each`, kept apart so that a call reads one word for it.
    first_limit_ns: AtomicU64,
    /// The backoff given at construction, and the one run-time settings put in its place.
    backoff: Backoff,
    backoff_live: ArcSwapOption<Backoff>,
    pub(crate) budget: Budget,
    pub(crate) latencies: Latencies,
    /// Set once `latencies` holds enough samples that calls are only sampled: every call reads
    /// this, not the histogram's sample counter that recording calls write.
    pub(crate) warmed: AtomicBool,
    base: OnceLock<Instant>,
    pub(crate) extra_attempts: AtomicU64,
    pub(crate) won_by_extra: AtomicU64,
    pub(crate) budget_refused: AtomicU64,
    pub(crate) deadlines: AtomicU64,
    pub(super) metrics: MeterCell,
}

impl fmt::Debug for RaceRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaceRetry")
            .field("name", &self.name())
            .field("retries", &self.retries())
            .field("max_attempts_in_flight", &self.max_attempts_in_flight())
            .field("after", &self.after_setting())
            .field("total", &self.total())
            .field("each", &self.each())
            .field("budget", &self.budget())
            .field("backoff", &self.backoff_now())
            .field("stats", &self.stats())
            .finish()
    }
}

impl RaceRetry {
    /// A builder for a raced function named `name`, with the options of `#[race_retry]`:
    /// [`total`](RaceRetryBuilder::total) is required; each other method says its default.
    pub fn builder(name: &'static str) -> RaceRetryBuilder {
        RaceRetryBuilder {
            name,
            options: resiliency_rules::RaceRetryOptions::default(),
        }
    }

    /// A policy with no options in force yet (no retries, no deadline): what
    /// [`apply`](Self::apply) puts them in force on.
    pub(crate) const fn new(name: &'static str) -> Self {
        RaceRetry {
            name,
            retries: AtomicU32::new(0),
            slots: AtomicU32::new(u32::MAX),
            after_ns: AtomicU64::new(0),
            quantile_ppb: AtomicU64::new(0),
            total_ns: AtomicU64::new(0),
            each_ns: AtomicU64::new(0),
            first_limit_ns: AtomicU64::new(0),
            backoff: Backoff::OFF,
            backoff_live: ArcSwapOption::const_empty(),
            budget: Budget::new(None),
            latencies: Latencies::new(),
            warmed: AtomicBool::new(false),
            base: OnceLock::new(),
            extra_attempts: AtomicU64::new(0),
            won_by_extra: AtomicU64::new(0),
            budget_refused: AtomicU64::new(0),
            deadlines: AtomicU64::new(0),
            metrics: MeterCell::new(),
        }
    }

    /// The policy of `options` unchecked: values past the rules clamped as a policy clamps
    /// whatever it holds (a `total` not given is zero). For the tests of those guarantees,
    /// through `__private`.
    pub(crate) fn unchecked(options: &RaceRetryBuilder) -> Self {
        let policy = RaceRetry::new(options.name);
        policy.apply(options);
        policy
    }

    /// The function's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Extra attempts at most.
    pub fn retries(&self) -> u32 {
        self.retries.load(Relaxed)
    }

    /// The most attempts of one call running at once (`max_attempts_in_flight`), or `None` when
    /// every attempt may run at once.
    pub fn max_attempts_in_flight(&self) -> Option<u32> {
        match self.slots() {
            u32::MAX => None,
            slots => Some(slots),
        }
    }

    /// The most attempts of one call running at once, `u32::MAX` without a cap.
    #[inline]
    pub(crate) fn slots(&self) -> u32 {
        self.slots.load(Relaxed)
    }

    /// The overall deadline.
    pub fn total(&self) -> Duration {
        duration(self.total_ns.load(Relaxed))
    }

    /// Attempt 1's time limit from the call's start in ns, 0 for none: the sooner of `total`
    /// (none when zero) and `each`. What its deadline counts from.
    #[inline]
    pub(crate) fn first_limit_ns(&self) -> u64 {
        self.first_limit_ns.load(Relaxed)
    }

    /// The bound on one attempt, if any (`each`).
    pub fn each(&self) -> Option<Duration> {
        match self.each_ns.load(Relaxed) {
            0 => None,
            u64::MAX => Some(Duration::MAX),
            each => Some(Duration::from_nanos(each - 1)),
        }
    }

    /// The `after` setting in force (see [`after`](Self::after) for the delay it gives now).
    pub fn after_setting(&self) -> After {
        match self.quantile_ppb.load(Relaxed) {
            0 => After::Fixed(duration(self.after_ns.load(Relaxed))),
            ppb => After::Percentile(ppb as f64 / 1e9),
        }
    }

    /// The backoff in force.
    fn backoff_now(&self) -> Backoff {
        self.backoff_live
            .load()
            .as_deref()
            .copied()
            .unwrap_or(self.backoff)
    }

    /// Puts checked options in force (values out of range clamped, a `total` not given left as
    /// it was), keeping the budget's balance, the latencies learned and the counters.
    pub(crate) fn apply(&self, builder: &RaceRetryBuilder) {
        let options = &builder.options;
        let (after_ns, quantile_ppb) = after_words(options.after());
        self.retries
            .store(options.retries().min(MAX_RETRIES), Relaxed);
        let slots = options
            .max_attempts_in_flight
            .map_or(u32::MAX, |slots| slots.max(1));
        self.slots.store(slots, Relaxed);
        self.after_ns.store(after_ns, Relaxed);
        self.quantile_ppb.store(quantile_ppb, Relaxed);
        if let Some(total) = options.total {
            self.total_ns.store(ns(total), Relaxed);
        }
        self.each_ns.store(each_word(options.each), Relaxed);
        let total = self.total_ns.load(Relaxed);
        self.first_limit_ns
            .store(first_limit(total, options.each), Relaxed);
        self.budget.set_share(match options.budget() {
            resiliency_rules::Budget::Off => None,
            resiliency_rules::Budget::Share(given) => Some(share(given)),
        });
        let growing = Backoff::growing(options.backoff_factor());
        let mut backoff = match options.backoff {
            Some(resiliency_rules::Backoff::Off) => Backoff::OFF,
            Some(resiliency_rules::Backoff::Base(base)) => growing.base(base),
            None => growing,
        };
        if let Some(max) = options.backoff_max {
            backoff = backoff.max(max);
        }
        self.backoff_live.store(Some(Arc::new(backoff)));
    }

    /// The budget's share (extra attempts per call, at most), or `None` without a budget
    /// (`budget`).
    pub fn budget(&self) -> Option<f64> {
        self.budget.share()
    }

    /// The longest a call's backoff number `n` (0 for its first) may wait, now: zero without a
    /// backoff. (The attempt may start sooner, at the next staggered start.)
    pub fn backoff_bound(&self, n: u32) -> Duration {
        self.backoff_now().bound(n, self.after(), self.total())
    }

    pub(crate) fn backs_off(&self) -> bool {
        self.backoff_now().is_on()
    }

    /// How long after an attempt started the next one starts, now (for `After::Percentile`, the
    /// percentile learned so far, or `total / (retries + 1)` before 32 attempts were seen).
    pub fn after(&self) -> Duration {
        match self.quantile_ppb.load(Relaxed) {
            0 => duration(self.after_ns.load(Relaxed)),
            _ => {
                let total = self.total();
                self.latencies
                    .percentile()
                    .unwrap_or(total / (self.retries() + 1))
                    .min(total)
            }
        }
    }

    /// The percentile `after` is learned at, or `None` for a fixed `after`.
    #[inline]
    pub(crate) fn quantile(&self) -> Option<f64> {
        match self.quantile_ppb.load(Relaxed) {
            0 => None,
            ppb => Some(ppb as f64 / 1e9),
        }
    }

    /// Time since this function's first extra attempt (the time base of the budget's floor).
    pub(crate) fn since_first(&self, now: Instant) -> Duration {
        now.saturating_duration_since(*self.base.get_or_init(|| now))
    }

    /// Races attempts made by `make` (called once per attempt; each call's future is one
    /// attempt) under this function's settings: attempt 1 at once, attempt k + 1 `after` after
    /// attempt k started or after a backoff when one fails; the first `Ok` wins and every other attempt is
    /// cancelled before this returns; after `total`, `Err(E::from(Rejected))`; when every attempt
    /// failed, the last error. The attempts run inside the caller's task (nothing is spawned).
    ///
    /// `make` is a closure with no argument, or one that takes the attempt's number (0 for the
    /// first attempt) wrapped in [`numbered`](super::numbered), to send each attempt elsewhere.
    pub fn run<M, Fut, T, E>(&'static self, make: M) -> Race<M, Fut, E, Always>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        Race::new(self, make, Always)
    }

    /// As [`run`](Self::run), but an error for which `retryable` is false ends the call at once
    /// (with that error, the other attempts cancelled).
    pub fn run_if<M, Fut, T, E, P>(&'static self, retryable: P, make: M) -> Race<M, Fut, E, P>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: Fn(&E) -> bool,
    {
        Race::new(self, make, retryable)
    }

    /// As [`run`](Self::run), for errors that say how long their upstream asked callers to wait
    /// ([`RetryHint`](crate::RetryHint), such as an HTTP `Retry-After`): after an attempt fails
    /// with such an error, no attempt starts before that wait is over (the staggered one
    /// neither), and when it would end past `total` the call ends at once with that error.
    /// Attempts still running keep racing meanwhile. `#[race_retry]` reads the hint of every
    /// error type that implements the trait by itself.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::race_retry::{observe, RaceRetry};
    /// use resiliency::{Rejected, RetryHint};
    ///
    /// #[derive(Debug)]
    /// enum ApiError {
    ///     Throttled(Duration), // a 429 with `Retry-After`
    ///     Refused(Rejected),
    /// }
    ///
    /// impl From<Rejected> for ApiError {
    ///     fn from(rejected: Rejected) -> Self {
    ///         ApiError::Refused(rejected)
    ///     }
    /// }
    ///
    /// impl RetryHint for ApiError {
    ///     fn retry_after(&self) -> Option<Duration> {
    ///         match self {
    ///             ApiError::Throttled(wait) => Some(*wait),
    ///             ApiError::Refused(_) => None,
    ///         }
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let race = RaceRetry::builder("docs-hinted-race")
    ///     .retries(1)
    ///     .after(Duration::from_millis(50))
    ///     .total(Duration::from_secs(5))
    ///     .backoff(resiliency::race_retry::Backoff::Off)
    ///     .register()
    ///     .unwrap();
    /// let calls = std::sync::atomic::AtomicU32::new(0);
    /// let (result, attempts) = observe(race.run_hinted(|| async {
    ///     match calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
    ///         0 => Err(ApiError::Throttled(Duration::from_secs(2))),
    ///         _ => Ok("served"),
    ///     }
    /// }))
    /// .await;
    /// assert_eq!(result.unwrap(), "served");
    /// // The retry waited the 2 s the upstream asked for.
    /// let retry = attempts.iter().find(|attempt| attempt.number == 2).unwrap();
    /// assert_eq!(retry.started, Duration::from_secs(2));
    /// # }
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn run_hinted<M, Fut, T, E>(
        &'static self,
        make: M,
    ) -> Race<M, Fut, E, Hinted<Always, fn(&E) -> Option<Duration>>>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected + RetryHint,
    {
        let hint = <E as RetryHint>::retry_after as fn(&E) -> Option<Duration>;
        Race::new(self, make, Hinted::new(Always, hint))
    }

    /// A race whose errors `judge` says are worth another attempt, and how long to wait.
    pub(crate) fn run_judged<M, Fut, T, E, P>(
        &'static self,
        make: M,
        judge: P,
    ) -> Race<M, Fut, E, P>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: Retryable<E>,
    {
        Race::new(self, make, judge)
    }
}

/// A budget share as a policy holds it: outside [`MIN_BUDGET_SHARE`, `MAX_BUDGET_SHARE`] clamped,
/// NaN as the minimum.
fn share(share: f64) -> f64 {
    // NaN fails `share > MIN_BUDGET_SHARE`.
    if share > MAX_BUDGET_SHARE {
        MAX_BUDGET_SHARE
    } else if share > MIN_BUDGET_SHARE {
        share
    } else {
        MIN_BUDGET_SHARE
    }
}

/// `after` as a policy holds it: the delay in ns and the quantile in parts per billion (0 for a
/// fixed delay).
const fn after_words(after: After) -> (u64, u64) {
    match after {
        After::Fixed(d) => (ns(d), 0),
        After::Percentile(q) => {
            let ppb = (q * 1e9 + 0.5) as u64;
            (0, if ppb == 0 { 1 } else { ppb })
        }
    }
}

/// A duration in ns, `Duration::MAX` (and anything from `u64::MAX` ns on) as `u64::MAX`.
const fn ns(d: Duration) -> u64 {
    let ns = d.as_nanos();
    if ns >= u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// `each` as a policy holds it: 0 for none, its ns plus one (`u64::MAX` for `Duration::MAX`).
const fn each_word(each: Option<Duration>) -> u64 {
    match each {
        Some(each) => ns(each).saturating_add(1),
        None => 0,
    }
}

/// Attempt 1's time limit in ns for a `total` of `total_ns` and `each`: the sooner of the two,
/// either one ignored when zero, 0 for none.
fn first_limit(total_ns: u64, each: Option<Duration>) -> u64 {
    match (total_ns, each.map_or(0, ns)) {
        (0, each) => each,
        (total, 0) => total,
        (total, each) => total.min(each),
    }
}

/// The duration of `ns` from [`ns`].
fn duration(ns: u64) -> Duration {
    if ns == u64::MAX {
        Duration::MAX
    } else {
        Duration::from_nanos(ns)
    }
}
