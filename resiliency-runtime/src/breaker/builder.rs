//! Options of a breaker: the builder, its validation and the resolved configuration.

use std::sync::Arc;
use std::time::Duration;

use super::keyed::KeyedBreaker;
use super::registry;
use super::Breaker;
use crate::named::Origin;
use crate::options::Options as _;
use crate::ConfigError;
use resiliency_rules::BreakerOptions;

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
    pub(crate) slow_call_duration: Option<Duration>,
    /// `slow_call_rate` (rate rule only): slow calls are successes with a rate of their own.
    pub(crate) slow_call_rate: Option<f64>,
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
    /// The settings given, as the rules check them (`name`, `key` and `written` unused).
    pub(super) options: BreakerOptions<'static>,
}

resiliency_rules::breaker_settings!(crate::options::table::builder! {
    BreakerBuilder.options;
});

impl BreakerBuilder {
    pub(crate) fn new(name: &str) -> Self {
        BreakerBuilder {
            name: Arc::from(name),
            options: BreakerOptions::default(),
        }
    }

    /// Builds one breaker, not registered anywhere.
    pub fn build(self) -> Result<Breaker, ConfigError> {
        Ok(Breaker::new(Arc::new(self.validate()?), None))
    }

    /// Builds a keyed family: one breaker per distinct key, created on first use, idle ones evicted.
    pub fn build_keyed(self) -> Result<KeyedBreaker, ConfigError> {
        Ok(KeyedBreaker::new(Arc::new(self.validate()?)))
    }

    /// Builds the breaker and registers it under its name, so that [`get`](super::get), every
    /// `#[breaker(name = ...)]` and every [`BreakerLayer`](crate::tower::BreakerLayer) with this
    /// name use it. If the name is taken, returns the registered breaker when its options are the
    /// same, and else an error naming the setting that differs.
    ///
    /// The run-time settings by name ([`settings`](crate::settings)) apply to a registered
    /// breaker, these options being its defaults.
    ///
    /// ```
    /// use resiliency::Breaker;
    ///
    /// let breaker = Breaker::builder("ledger").error_threshold(5).register().unwrap();
    /// let again = Breaker::builder("ledger").error_threshold(5).register().unwrap();
    /// assert!(std::sync::Arc::ptr_eq(&breaker, &again));
    /// assert_eq!(
    ///     Breaker::builder("ledger").error_threshold(2).register().unwrap_err().to_string(),
    ///     "breaker `ledger`: `error_threshold` = 2 from `register` differs from 5 from `register`"
    /// );
    /// ```
    pub fn register(self) -> Result<Arc<Breaker>, ConfigError> {
        self.register_static(Origin::Builder).map(Arc::clone)
    }

    /// [`register`](Self::register), the breaker as the registry holds it for good, the options
    /// coming from `origin`: a difference from a registration of the name is an error for a
    /// builder, and logged for an attribute's site or a layer (which then use the registered
    /// breaker).
    pub(crate) fn register_static(
        self,
        origin: Origin,
    ) -> Result<&'static Arc<Breaker>, ConfigError> {
        let config = self.validate()?;
        self.register_config(config, origin)
    }

    /// [`register_static`](Self::register_static) with `config`, these options' own
    /// ([`config`](Self::config)), known to break no rule (a site's, from `settings::usable`):
    /// the rules are not checked again.
    pub(crate) fn register_config(
        self,
        config: Config,
        origin: Origin,
    ) -> Result<&'static Arc<Breaker>, ConfigError> {
        let config = Arc::new(config);
        let name = config.name.clone();
        // Its settings are put in force before it is published: a second registration of the
        // name waits, and gets the breaker with its overrides.
        let (breaker, conflict) = registry::single(&name, &self, origin, || {
            let breaker = Arc::new(Breaker::new(config, None));
            crate::settings::attach(self.clone(), breaker.clone());
            breaker
        })
        .map_err(|()| self_conflict(&name, "keyed"))?;
        differing(&name, origin, conflict)?;
        Ok(breaker)
    }

    /// Builds a keyed family and registers it under its name (see [`register`](Self::register)).
    pub fn register_keyed(self) -> Result<Arc<KeyedBreaker>, ConfigError> {
        self.register_keyed_as(Origin::Builder)
    }

    /// [`register_keyed`](Self::register_keyed), the options coming from `origin` (see
    /// [`register_static`](Self::register_static)).
    pub(crate) fn register_keyed_as(
        self,
        origin: Origin,
    ) -> Result<Arc<KeyedBreaker>, ConfigError> {
        let config = self.validate()?;
        self.register_keyed_config(config, origin)
    }

    /// [`register_keyed_as`](Self::register_keyed_as) with `config`, these options' own, known to
    /// break no rule: the rules are not checked again.
    pub(crate) fn register_keyed_config(
        self,
        config: Config,
        origin: Origin,
    ) -> Result<Arc<KeyedBreaker>, ConfigError> {
        let config = Arc::new(config);
        let name = config.name.clone();
        // Settings in force before it is published, as for a single breaker.
        let (family, conflict) = registry::keyed(&name, &self, origin, || {
            let family = Arc::new(KeyedBreaker::new(config));
            crate::settings::attach(self.clone(), family.clone());
            family
        })
        .map_err(|()| self_conflict(&name, "single"))?;
        differing(&name, origin, conflict)?;
        Ok(family)
    }

    /// The options as the shared rules see them.
    pub(super) fn options(&self) -> BreakerOptions<'_> {
        BreakerOptions {
            name: Some(&self.name),
            // A builder may finish keyed or not: the keyed options are always allowed (and
            // unused by `build` and `register`).
            key: true,
            ..self.options.clone()
        }
    }

    /// Checks every rule ([`resiliency_rules::breaker`]) and resolves the defaults (the table's,
    /// through the options' accessors).
    pub(crate) fn validate(&self) -> Result<Config, ConfigError> {
        self.check()?;
        Ok(self.config())
    }

    /// The configuration of options that break no rule (checked by [`validate`](Self::validate)
    /// or by the settings), the defaults resolved.
    pub(crate) fn config(&self) -> Config {
        let o = &self.options;
        let timeout = o.timeout;
        let error_timeout = match (o.capacity, timeout) {
            (Some(c), Some(t)) => capacity_error_timeout(t, c),
            _ => o.error_timeout(),
        };
        let rule = match o.failure_rate {
            Some(rate) => Rule::Rate {
                rate,
                min_calls: o.min_calls(),
            },
            None => Rule::Count {
                threshold: o.error_threshold(),
            },
        };
        let max_error_timeout = o.max_error_timeout_for(error_timeout);
        // A worker's timed-out calls are at least `timeout` apart, so a window shorter than
        // `error_threshold` timeouts could never see the errors that should open the breaker
        // (with `capacity < 2/3`, `error_timeout` alone is that short).
        let least_window = match (rule, timeout) {
            (Rule::Count { threshold }, Some(t)) => t.saturating_mul(threshold),
            (Rule::Rate { min_calls, .. }, Some(t)) => t.saturating_mul(min_calls),
            (_, None) => Duration::ZERO,
        };
        Config {
            name: self.name.clone(),
            rule,
            window: o
                .error_window
                .unwrap_or_else(|| error_timeout.max(least_window)),
            error_timeout,
            success_threshold: o.success_threshold(),
            half_open_calls: o.half_open_calls(),
            timeout,
            half_open_timeout: o.half_open_timeout,
            slow_call_duration: o.slow_call_duration,
            slow_call_rate: o
                .slow_call_rate
                .filter(|_| matches!(rule, Rule::Rate { .. })),
            backoff: o.backoff(),
            max_error_timeout,
            idle_timeout: o.idle_timeout(),
            max_keys: o.max_keys(),
        }
    }
}

/// A registration whose options differ from the name's (`conflict`, in words): an error for a
/// builder; logged for an attribute's site or a layer, which use the registered breaker.
fn differing(name: &str, origin: Origin, conflict: Option<String>) -> Result<(), ConfigError> {
    let Some(message) = conflict else {
        return Ok(());
    };
    let error = BreakerBuilder::error(name, message);
    if origin == Origin::Builder {
        return Err(error);
    }
    crate::later::emit(move || {
        tracing::error!(
            target: "resiliency::settings",
            %error,
            "options differ from those the name was registered with; the registered breaker is used"
        )
    });
    Ok(())
}

fn self_conflict(name: &str, other: &str) -> ConfigError {
    BreakerBuilder::error(
        name,
        format!("the name is already registered to a {other} breaker"),
    )
}

/// `error_timeout = timeout * capacity / (1 - capacity)`: the open time that leaves a worker free
/// `capacity` of the time while every probe runs into `timeout`.
pub(crate) fn capacity_error_timeout(timeout: Duration, capacity: f64) -> Duration {
    let secs = timeout.as_secs_f64() * capacity / (1.0 - capacity);
    // Round to whole microseconds so that 0.75 * 60 s gives exactly 180 s.
    Duration::try_from_secs_f64((secs * 1e6).round() / 1e6).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_gives_the_open_time_in_whole_microseconds() {
        let t = Duration::from_secs(60);
        assert_eq!(capacity_error_timeout(t, 0.5), t);
        assert_eq!(capacity_error_timeout(t, 0.75), Duration::from_secs(180));
        assert_eq!(capacity_error_timeout(t, 1.0 - 1e-300), Duration::MAX);
    }
}
