//! [`TooBusyBuilder`]: a guard's options, checked against the rules before it is built or
//! registered.

use resiliency_rules::{InFlight, TooBusyOptions};

use super::adaptive::Bounds;
use super::too_busy::TooBusy;
use crate::options::Options as _;
use crate::ConfigError;

/// Builds a [`TooBusy`] guard from code, with the options of `#[too_busy(...)]` (each method named
/// like the attribute's argument) and the same rules: [`build`](Self::build) refuses what the
/// attribute refuses at compile time.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct TooBusyBuilder {
    pub(super) name: &'static str,
    /// The settings given, as the rules check them (`name` unused).
    pub(super) options: TooBusyOptions<'static>,
}

resiliency_rules::too_busy_settings!(crate::options::table::builder! {
    TooBusyBuilder.options;
});

impl TooBusyBuilder {
    /// `max_in_flight = "auto"`: refuses a call when as many calls are in flight as a limit
    /// learned from the latency and failures of the guard's calls (see the
    /// [`too_busy`](super#max_in_flight--auto) module), between [`auto_min`](Self::auto_min) and
    /// [`auto_max`](Self::auto_max), from [`auto_initial`](Self::auto_initial). Without
    /// [`max_lag`](Self::max_lag), the guard then ignores the runtime's lag.
    ///
    /// ```
    /// use resiliency::too_busy::TooBusy;
    ///
    /// let guard = TooBusy::builder("db")
    ///     .max_in_flight_auto()
    ///     .auto_initial(16)
    ///     .auto_max(64)
    ///     .build()
    ///     .unwrap();
    /// assert!(guard.learns_in_flight_limit());
    /// assert_eq!(guard.in_flight_limit(), Some(16)); // `auto_initial`, to start
    /// ```
    pub fn max_in_flight_auto(mut self) -> Self {
        self.options.max_in_flight = Some(InFlight::Auto);
        self
    }

    /// The bounds of a learned limit, defaults filled in (checked by `violations`): a default
    /// `auto_max` below a given `auto_min` is raised to it, a default `auto_initial` is clamped
    /// into the bounds.
    pub(super) fn bounds(&self) -> Bounds {
        let o = &self.options;
        let min = o.auto_min();
        let max = o.auto_max.unwrap_or_else(|| o.auto_max().max(min));
        Bounds {
            min,
            max,
            initial: o.auto_initial().clamp(min.min(max), max),
        }
    }

    /// The guard, or every rule its options break.
    pub fn build(self) -> Result<TooBusy, ConfigError> {
        self.check()?;
        let guard = TooBusy::new(self.name);
        guard.apply(&self);
        Ok(guard)
    }

    /// Every rule the options break.
    pub(super) fn violations(&self) -> Vec<resiliency_rules::Violation> {
        crate::options::checked(resiliency_rules::too_busy(&TooBusyOptions {
            name: Some(self.name),
            ..self.options.clone()
        }))
    }
}
