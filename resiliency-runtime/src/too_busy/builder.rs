//! [`TooBusyBuilder`]: a guard's options, checked against the rules before it is built or
//! registered.

use std::time::Duration;

use super::adaptive::{Bounds, DEFAULT_AUTO_INITIAL, DEFAULT_AUTO_MAX, DEFAULT_AUTO_MIN};
use super::guard::TooBusy;
use crate::ConfigError;

/// Builds a [`TooBusy`] guard from code, with the options of `#[too_busy(...)]` (each method named
/// like the attribute's argument) and the same rules: [`build`](Self::build) refuses what the
/// attribute refuses at compile time.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct TooBusyBuilder {
    pub(super) name: &'static str,
    pub(super) max_lag: Option<Duration>,
    pub(super) max_in_flight: Option<u32>,
    pub(super) max_in_flight_auto: bool,
    pub(super) auto_min: Option<u32>,
    pub(super) auto_max: Option<u32>,
    pub(super) auto_initial: Option<u32>,
    pub(super) max_latency: Option<Duration>,
}

impl TooBusyBuilder {
    /// Refuses calls when the runtime's smoothed lag passes `max_lag` (above zero): with
    /// probability `(lag - max_lag) / max_lag`, so always at twice `max_lag`. On beside any other
    /// signal.
    pub fn max_lag(mut self, max_lag: Duration) -> Self {
        self.max_lag = Some(max_lag);
        self
    }

    /// Refuses a call when `limit` calls (at least 1) are already in flight. Without
    /// [`max_lag`](Self::max_lag), the guard then ignores the runtime's lag.
    pub fn max_in_flight(mut self, limit: u32) -> Self {
        self.max_in_flight = Some(limit);
        self.max_in_flight_auto = false;
        self
    }

    /// `max_in_flight = "auto"`: refuses a call when as many calls are in flight as a limit
    /// learned from the latency and failures of the guard's calls (see the
    /// [`too_busy`](super#max_in_flight--auto) module), between [`auto_min`](Self::auto_min) and
    /// [`auto_max`](Self::auto_max), from [`auto_initial`](Self::auto_initial). Without
    /// [`max_lag`](Self::max_lag), the guard then ignores the runtime's lag.
    ///
    /// ```
    /// use resiliency::too_busy::TooBusy;
    ///
    /// let guard = TooBusy::builder("db").max_in_flight_auto().auto_max(64).build().unwrap();
    /// assert!(guard.learns_in_flight_limit());
    /// assert_eq!(guard.in_flight_limit(), Some(20)); // `auto_initial`'s default, to start
    /// ```
    pub fn max_in_flight_auto(mut self) -> Self {
        self.max_in_flight = None;
        self.max_in_flight_auto = true;
        self
    }

    /// The lowest limit `max_in_flight = "auto"` learns (at least 1; 4 by default).
    pub fn auto_min(mut self, min: u32) -> Self {
        self.auto_min = Some(min);
        self
    }

    /// The highest limit `max_in_flight = "auto"` learns (1000 by default).
    pub fn auto_max(mut self, max: u32) -> Self {
        self.auto_max = Some(max);
        self
    }

    /// The limit `max_in_flight = "auto"` starts from (20 by default, within the bounds).
    pub fn auto_initial(mut self, initial: u32) -> Self {
        self.auto_initial = Some(initial);
        self
    }

    /// The bounds of a learned limit, defaults filled in (checked by `violations`).
    pub(super) fn bounds(&self) -> Bounds {
        let min = self.auto_min.unwrap_or(DEFAULT_AUTO_MIN);
        let max = self.auto_max.unwrap_or(DEFAULT_AUTO_MAX.max(min));
        Bounds {
            min,
            max,
            initial: self
                .auto_initial
                .unwrap_or(DEFAULT_AUTO_INITIAL)
                .clamp(min.min(max), max),
        }
    }

    /// Refuses calls while the mean latency of recent calls is above `max_latency` (above zero).
    /// Without [`max_lag`](Self::max_lag), the guard then ignores the runtime's lag.
    pub fn max_latency(mut self, max_latency: Duration) -> Self {
        self.max_latency = Some(max_latency);
        self
    }

    /// The guard, or every rule its options break.
    pub fn build(self) -> Result<TooBusy, ConfigError> {
        ConfigError::from_violations("too_busy", self.name, self.violations())?;
        let guard = TooBusy::new(self.name);
        guard.apply(&self);
        Ok(guard)
    }

    /// Every rule the options break.
    pub(super) fn violations(&self) -> Vec<resiliency_rules::Violation> {
        resiliency_rules::too_busy(&resiliency_rules::TooBusyOptions {
            name: Some(self.name),
            max_lag: self.max_lag,
            max_in_flight: self.max_in_flight,
            max_in_flight_auto: self.max_in_flight_auto,
            auto_min: self.auto_min,
            auto_max: self.auto_max,
            auto_initial: self.auto_initial,
            max_latency: self.max_latency,
        })
    }
}
