//! Options of a breaker: the builder, its validation and the resolved configuration.

use std::sync::Arc;
use std::time::Duration;

use super::keyed::KeyedBreaker;
use super::registry;
use super::Breaker;
use crate::ConfigError;

/// Default for `error_threshold`: errors within `error_window` that open the breaker.
pub const DEFAULT_ERROR_THRESHOLD: u32 = 3;
/// Default for `error_timeout`: how long the breaker stays open after the last error.
pub const DEFAULT_ERROR_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for `min_calls` under the rate rule.
pub const DEFAULT_MIN_CALLS: u32 = 20;
/// Default for `idle_timeout` of keyed breakers: a key unused this long may be evicted.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Default for `max_keys` of keyed breakers: at most about 40 MB of breakers (see
/// [`BreakerBuilder::max_keys`]).
pub const DEFAULT_MAX_KEYS: usize = 1 << 14;

/// The rule that opens a closed breaker.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Rule {
    /// Semian's rule: `threshold` errors within the window.
    Count { threshold: u32 },
    /// resilience4j's rule: at least `min_calls` calls within the window and `errors / calls >= rate`.
    Rate { rate: f64, min_calls: u32 },
}

/// The validated options of a breaker, shared by every breaker of a keyed family.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) name: Arc<str>,
    pub(crate) rule: Rule,
    pub(crate) window: Duration,
    pub(crate) error_timeout: Duration,
    pub(crate) success_threshold: u32,
    pub(crate) half_open_calls: u32,
    pub(crate) timeout: Option<Duration>,
    pub(crate) half_open_timeout: Option<Duration>,
    pub(crate) backoff: f64,
    pub(crate) max_error_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_keys: usize,
}

/// Builds a [`Breaker`] (or a keyed family of them) from code, with the same options as the
/// `#[breaker(...)]` attribute.
///
/// ```
/// use std::time::Duration;
/// use resiliency::Breaker;
///
/// let breaker = Breaker::builder("payments")
///     .error_threshold(3)
///     .error_window(Duration::from_secs(10))
///     .capacity(0.75)
///     .timeout(Duration::from_secs(60))
///     .build()
///     .unwrap();
/// // capacity 0.75 with a 60 s timeout keeps the breaker open for 180 s after the last error.
/// assert_eq!(breaker.error_timeout(), Duration::from_secs(180));
///
/// let bad = Breaker::builder("payments").capacity(1.5).timeout(Duration::from_secs(1)).build();
/// assert_eq!(
///     bad.unwrap_err().to_string(),
///     "breaker `payments`: `capacity` must lie between 0 and 1 (exclusive), got 1.5: \
///      it is the share of time a worker stays free, e.g. `capacity = 0.75`"
/// );
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`, `build_keyed`, `register` or `register_keyed`"]
pub struct BreakerBuilder {
    pub(super) name: Arc<str>,
    pub(super) error_threshold: Option<u32>,
    pub(super) error_window: Option<Duration>,
    pub(super) error_timeout: Option<Duration>,
    pub(super) success_threshold: Option<u32>,
    pub(super) capacity: Option<f64>,
    pub(super) timeout: Option<Duration>,
    pub(super) half_open_timeout: Option<Duration>,
    pub(super) failure_rate: Option<f64>,
    pub(super) min_calls: Option<u32>,
    pub(super) half_open_calls: Option<u32>,
    pub(super) backoff: Option<f64>,
    pub(super) max_error_timeout: Option<Duration>,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) max_keys: Option<usize>,
}

impl BreakerBuilder {
    pub(crate) fn new(name: &str) -> Self {
        BreakerBuilder {
            name: Arc::from(name),
            error_threshold: None,
            error_window: None,
            error_timeout: None,
            success_threshold: None,
            capacity: None,
            timeout: None,
            half_open_timeout: None,
            failure_rate: None,
            min_calls: None,
            half_open_calls: None,
            backoff: None,
            max_error_timeout: None,
            idle_timeout: None,
            max_keys: None,
        }
    }

    /// Count rule (the default, as in Semian): the breaker opens when this many errors fall within
    /// `error_window`. Successes in between do not reset the count. At most 65535 (the breaker
    /// keeps the time of each of the last `errors` errors, 8 bytes each, from its first error on;
    /// for large numbers of calls, the rate rule's `failure_rate` counts in fixed memory).
    /// Default: 3.
    pub fn error_threshold(mut self, errors: u32) -> Self {
        self.error_threshold = Some(errors);
        self
    }

    /// The window the count rule (or the rate rule) looks back over. Default: `error_timeout`, but
    /// at least `error_threshold` (or `min_calls`) times `timeout`, so that a worker whose calls all
    /// time out can still meet the rule.
    pub fn error_window(mut self, window: Duration) -> Self {
        self.error_window = Some(window);
        self
    }

    /// How long the breaker stays open, measured from the last error. Default: 10 s.
    pub fn error_timeout(mut self, open_for: Duration) -> Self {
        self.error_timeout = Some(open_for);
        self
    }

    /// Successful probes in half-open that close the breaker, at most 65535. Default: 1.
    pub fn success_threshold(mut self, successes: u32) -> Self {
        self.success_threshold = Some(successes);
        self
    }

    /// Alternative to `error_timeout`: the share of time a worker stays free while it keeps probing an
    /// endpoint that only times out. `error_timeout = timeout * capacity / (1 - capacity)`, so it
    /// needs `timeout` and must lie in (0, 1).
    pub fn capacity(mut self, capacity: f64) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Bounds every call: a call still running after it is abandoned, counts as an error and returns a
    /// [`Rejected`](crate::Rejected) that says it timed out. Default: none.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// A shorter bound for probe calls while half-open (Semian's `half_open_resource_timeout`).
    pub fn half_open_timeout(mut self, timeout: Duration) -> Self {
        self.half_open_timeout = Some(timeout);
        self
    }

    /// Rate rule instead of the count rule: the breaker opens on an error when at least `min_calls`
    /// calls completed within `error_window` and `errors / calls >= rate`. Must lie in (0, 1].
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = Some(rate);
        self
    }

    /// The rate rule's minimum number of calls within the window. Default: 20.
    pub fn min_calls(mut self, calls: u32) -> Self {
        self.min_calls = Some(calls);
        self
    }

    /// How many probe calls may run at once while half-open (at most 65535); further calls are
    /// refused. Default: 1.
    pub fn half_open_calls(mut self, calls: u32) -> Self {
        self.half_open_calls = Some(calls);
        self
    }

    /// Grows the open time after each failed probe: the n-th consecutive re-open stays open for
    /// `error_timeout * backoff^n`, capped at `max_error_timeout`. Must be at least 1. Default: 1 (off).
    pub fn backoff(mut self, factor: f64) -> Self {
        self.backoff = Some(factor);
        self
    }

    /// The cap on the open time grown by `backoff` (so it needs `backoff`). Default: 10 times
    /// `error_timeout`.
    pub fn max_error_timeout(mut self, cap: Duration) -> Self {
        self.max_error_timeout = Some(cap);
        self
    }

    /// Keyed breakers only: a key unused for this long may be evicted, as long as its breaker
    /// holds nothing worth keeping: closed with no recent errors, or open with its open time
    /// passed (its next call would be a probe). Default: 10 minutes.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// Keyed breakers only: the most keys held at once. When full, a new key evicts the
    /// longest-unused keys among those holding nothing worth keeping (see
    /// [`idle_timeout`](Self::idle_timeout)), however recently used; if there are none, it gets
    /// a fresh breaker that is not remembered. Default: 16,384.
    ///
    /// Each key costs memory once its breaker has seen an error: about 300 bytes plus 8 per unit
    /// of `error_threshold` under the count rule (about 330 bytes with the default threshold),
    /// and about 300 bytes plus 128 per stripe of the rate window under the rate rule (one
    /// stripe per CPU, from 4 to 16: about 0.8 to 2.4 KB). The default therefore bounds a family
    /// at about 5 MB under the count rule and 13 to 40 MB under the rate rule.
    pub fn max_keys(mut self, keys: usize) -> Self {
        self.max_keys = Some(keys);
        self
    }

    /// Builds one breaker, not registered anywhere.
    pub fn build(self) -> Result<Breaker, ConfigError> {
        Ok(Breaker::new(Arc::new(self.validate()?), None))
    }

    /// Builds a keyed family: one breaker per distinct key, created on first use, idle ones evicted.
    pub fn build_keyed(self) -> Result<KeyedBreaker, ConfigError> {
        Ok(KeyedBreaker::new(Arc::new(self.validate()?)))
    }

    /// Builds the breaker and registers it under its name, so that [`get`](super::get) and every
    /// `#[breaker(name = ...)]` with this name use it. If the name is taken, returns the registered
    /// breaker (the first registration's options win).
    ///
    /// The run-time settings by name ([`settings`](crate::settings)) apply to a registered
    /// breaker, these options being its defaults.
    pub fn register(self) -> Result<Arc<Breaker>, ConfigError> {
        self.register_static().map(Arc::clone)
    }

    /// [`register`](Self::register), the breaker as the registry holds it for good.
    pub(crate) fn register_static(self) -> Result<&'static Arc<Breaker>, ConfigError> {
        let config = Arc::new(self.validate()?);
        let name = config.name.clone();
        let mut created = false;
        let breaker = registry::single(name.clone(), || {
            created = true;
            Arc::new(Breaker::new(config, None))
        })
        .ok_or_else(|| self_conflict(&name, "keyed"))?;
        if created {
            crate::settings::attach(self, breaker.clone());
        }
        Ok(breaker)
    }

    /// Builds a keyed family and registers it under its name (see [`register`](Self::register)).
    pub fn register_keyed(self) -> Result<Arc<KeyedBreaker>, ConfigError> {
        let config = Arc::new(self.validate()?);
        let name = config.name.clone();
        let mut created = false;
        let family = registry::keyed(name.clone(), || {
            created = true;
            Arc::new(KeyedBreaker::new(config))
        })
        .ok_or_else(|| self_conflict(&name, "single"))?;
        if created {
            crate::settings::attach(self, family.clone());
        }
        Ok(family)
    }

    /// The options as the shared rules see them.
    pub(super) fn options(&self) -> resiliency_rules::BreakerOptions<'_> {
        resiliency_rules::BreakerOptions {
            name: Some(&self.name),
            // A builder may finish keyed or not: the keyed options are always allowed (and
            // unused by `build` and `register`).
            key: true,
            error_threshold: self.error_threshold,
            error_window: self.error_window,
            error_timeout: self.error_timeout,
            success_threshold: self.success_threshold,
            capacity: self.capacity,
            timeout: self.timeout,
            half_open_timeout: self.half_open_timeout,
            failure_rate: self.failure_rate,
            min_calls: self.min_calls,
            half_open_calls: self.half_open_calls,
            backoff: self.backoff,
            max_error_timeout: self.max_error_timeout,
            idle_timeout: self.idle_timeout,
            max_keys: self.max_keys.map(|keys| keys as u64),
            written: &[],
        }
    }

    /// Checks every rule ([`resiliency_rules::breaker`]) and resolves the defaults.
    pub(crate) fn validate(&self) -> Result<Config, ConfigError> {
        ConfigError::from_violations(
            "breaker",
            &self.name,
            resiliency_rules::breaker(&self.options()),
        )?;
        let timeout = self.timeout;
        let error_timeout = match (self.capacity, timeout) {
            (Some(c), Some(t)) => capacity_error_timeout(t, c),
            _ => self.error_timeout.unwrap_or(DEFAULT_ERROR_TIMEOUT),
        };
        let rule = match self.failure_rate {
            Some(rate) => Rule::Rate {
                rate,
                min_calls: self.min_calls.unwrap_or(DEFAULT_MIN_CALLS),
            },
            None => Rule::Count {
                threshold: self.error_threshold.unwrap_or(DEFAULT_ERROR_THRESHOLD),
            },
        };
        let max_error_timeout = self
            .max_error_timeout
            .unwrap_or_else(|| error_timeout.saturating_mul(10))
            .max(error_timeout);
        // A worker's timed-out calls are at least `timeout` apart, so a window shorter than
        // `error_threshold` timeouts could never see the errors that should open the breaker
        // (with `capacity < 2/3`, `error_timeout` alone is that short).
        let least_window = match (rule, timeout) {
            (Rule::Count { threshold }, Some(t)) => t.saturating_mul(threshold),
            (Rule::Rate { min_calls, .. }, Some(t)) => t.saturating_mul(min_calls),
            (_, None) => Duration::ZERO,
        };
        Ok(Config {
            name: self.name.clone(),
            rule,
            window: self
                .error_window
                .unwrap_or_else(|| error_timeout.max(least_window)),
            error_timeout,
            success_threshold: self.success_threshold.unwrap_or(1),
            half_open_calls: self.half_open_calls.unwrap_or(1),
            timeout,
            half_open_timeout: self.half_open_timeout,
            backoff: self.backoff.unwrap_or(1.0),
            max_error_timeout,
            idle_timeout: self.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT),
            max_keys: self.max_keys.unwrap_or(DEFAULT_MAX_KEYS),
        })
    }
}

fn self_conflict(name: &str, other: &str) -> ConfigError {
    ConfigError::new(
        "breaker",
        name,
        format!("the name is already registered to a {other} breaker"),
    )
}

/// `error_timeout = timeout * capacity / (1 - capacity)`: the open time that leaves a worker free
/// `capacity` of the time while every probe runs into `timeout`.
///
/// ```
/// use std::time::Duration;
/// use resiliency::breaker::capacity_error_timeout;
///
/// let t = Duration::from_secs(60);
/// assert_eq!(capacity_error_timeout(t, 0.5), t);
/// assert_eq!(capacity_error_timeout(t, 0.75), Duration::from_secs(180));
/// ```
pub fn capacity_error_timeout(timeout: Duration, capacity: f64) -> Duration {
    let secs = timeout.as_secs_f64() * capacity / (1.0 - capacity);
    // Round to whole microseconds so that 0.75 * 60 s gives exactly 180 s.
    Duration::try_from_secs_f64((secs * 1e6).round() / 1e6).unwrap_or(Duration::MAX)
}
