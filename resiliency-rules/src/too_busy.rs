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
    /// `max_in_flight = "auto"`: the most calls running at once is learned.
    pub max_in_flight_auto: bool,
    /// `auto_min`: the lowest limit `"auto"` learns.
    pub auto_min: Option<u32>,
    /// `auto_max`: the highest limit `"auto"` learns.
    pub auto_max: Option<u32>,
    /// `auto_initial`: the limit `"auto"` starts from.
    pub auto_initial: Option<u32>,
    /// `max_latency`: the recent mean latency above which calls are shed.
    pub max_latency: Option<Duration>,
}

/// `auto_min`'s default: the lowest limit `max_in_flight = "auto"` learns.
pub const DEFAULT_AUTO_MIN: u32 = 4;
/// `auto_initial`'s default: the limit `max_in_flight = "auto"` starts from.
pub const DEFAULT_AUTO_INITIAL: u32 = 20;
/// `auto_max`'s default: the highest limit `max_in_flight = "auto"` learns.
pub const DEFAULT_AUTO_MAX: u32 = 1000;

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use resiliency_rules::{too_busy, TooBusyOptions};
///
/// let options = TooBusyOptions { max_in_flight: Some(0), ..TooBusyOptions::default() };
/// assert_eq!(too_busy(&options)[0].argument(), "max_in_flight");
///
/// // The bounds of a learned limit apply with `max_in_flight = "auto"` only.
/// let options = TooBusyOptions { auto_max: Some(2), ..TooBusyOptions::default() };
/// assert!(too_busy(&options).is_empty());
/// let options = TooBusyOptions { max_in_flight_auto: true, ..options };
/// assert_eq!(
///     too_busy(&options)[0].to_string(),
///     "`auto_max` (2) must be at least `auto_min` (4, its default)"
/// );
/// ```
pub fn too_busy(options: &TooBusyOptions<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    name_rule(options.name, &mut out);
    above_zero("max_lag", options.max_lag, &mut out);
    if options.max_in_flight == Some(0) {
        out.push(Violation::value(
            "max_in_flight",
            "`max_in_flight` must be at least 1 (leave it out for no limit), e.g. `max_in_flight = 256`, or `max_in_flight = \"auto\"` to learn it",
        ));
    }
    auto_rules(options, &mut out);
    above_zero("max_latency", options.max_latency, &mut out);
    out
}

/// The bounds' rules, with `max_in_flight = "auto"`. Without it they are inert: a setting for
/// every site (`"*"`) may set them on sites with a fixed limit. (`#[too_busy]` refuses a bound
/// written without `"auto"`, a rule about the attribute's text.)
fn auto_rules(o: &TooBusyOptions<'_>, out: &mut Vec<Violation>) {
    if !o.max_in_flight_auto {
        return;
    }
    if o.auto_min == Some(0) {
        out.push(Violation::value(
            "auto_min",
            "`auto_min` must be at least 1: the learned limit never goes below it, e.g. `auto_min = 4` (the default)",
        ));
    }
    // Each against the others as given, or their defaults where left out.
    let min = o.auto_min.unwrap_or(DEFAULT_AUTO_MIN).max(1);
    let max = o.auto_max.unwrap_or(DEFAULT_AUTO_MAX);
    if let (Some(given_max), true) = (o.auto_max, max < min) {
        out.push(
            Violation::value(
                "auto_max",
                format!(
                    "`auto_max` ({given_max}) must be at least `auto_min` ({min}{})",
                    if o.auto_min.is_some() {
                        ""
                    } else {
                        ", its default"
                    }
                ),
            )
            .involving(&["auto_min", "max_in_flight"])
            .ordered(std::cmp::Ordering::Greater),
        );
    }
    if let Some(initial) = o.auto_initial {
        if initial < min || initial > max {
            out.push(Violation::value(
                "auto_initial",
                format!("`auto_initial` ({initial}) must lie between `auto_min` ({min}) and `auto_max` ({max}), the bounds of the learned limit"),
            ).involving(&["auto_min", "auto_max", "max_in_flight"]));
        }
    }
}
