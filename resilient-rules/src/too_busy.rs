//! The rules of a load-shedding guard's options (`#[too_busy(...)]`, `TooBusy::builder`).

use std::time::Duration;

use crate::{above_zero, name_rule, Violation};

/// A guard's options as given; `None` where left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TooBusyOptions<'a> {
    /// The guard's name, when one is given.
    pub name: Option<&'a str>,
    /// `max_lag`: the runtime lag above which calls are shed.
    pub max_lag: Option<Duration>,
    /// `max_in_flight`: the most calls running at once.
    pub max_in_flight: Option<u32>,
    /// `max_latency`: the recent mean latency above which calls are shed.
    pub max_latency: Option<Duration>,
}

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use resilient_rules::{too_busy, TooBusyOptions};
///
/// let options = TooBusyOptions { max_in_flight: Some(0), ..TooBusyOptions::default() };
/// assert_eq!(too_busy(&options)[0].argument(), "max_in_flight");
/// ```
pub fn too_busy(options: &TooBusyOptions<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    name_rule(options.name, &mut out);
    above_zero("max_lag", options.max_lag, &mut out);
    if options.max_in_flight == Some(0) {
        out.push(Violation::value(
            "max_in_flight",
            "`max_in_flight` must be at least 1 (leave it out for no limit), e.g. `max_in_flight = 256`",
        ));
    }
    above_zero("max_latency", options.max_latency, &mut out);
    out
}
