//! The rules of a load-shedding guard's options (`#[too_busy(...)]`, `TooBusy::builder`).

use crate::{above_zero, name_rule, Violation};

/// A limit on calls in flight: a number, or learned from the calls' latency.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InFlight {
    /// At most this many calls at once.
    Fixed(u32),
    /// A limit learned from the calls' latency and failures (`max_in_flight = "auto"`).
    Auto,
}

impl From<u32> for InFlight {
    fn from(limit: u32) -> Self {
        InFlight::Fixed(limit)
    }
}

/// `#[too_busy]`'s settings: the table that the attribute's arguments, the builder's methods, the
/// settings by name and the docs come from (see the crate's `table` module).
#[macro_export]
#[doc(hidden)]
macro_rules! too_busy_settings {
    ($($then:ident)::+ ! { $($before:tt)* }) => {
        $($then)::+! { $($before)*
            /// Refuse with probability `(lag - max_lag) / max_lag` (always at twice it); `async fn` only.
            /// The runtime's smoothed lag is compared with it; above zero. Named, the lag is checked
            /// beside `max_in_flight` and `max_latency`.
            max_lag: ::core::time::Duration as Timeout, e.g. "50ms", default derived "`resiliency::too_busy::max_lag()` when no signal is named, else off";
            /// At most this many calls of this fn at once, the next refused; `"auto"`: a limit learned from the calls' latency and failures, between `auto_min` and `auto_max`. Named without `max_lag`, it turns the lag check off.
            /// At least 1.
            max_in_flight: $crate::InFlight as InFlight, e.g. 256, default none "off";
            /// The lowest limit `max_in_flight = "auto"` learns; at least 1.
            auto_min: u32 as Count, e.g. 8, default = 1;
            /// The highest limit `max_in_flight = "auto"` learns.
            auto_max: u32 as Count, e.g. 500, default = 1000;
            /// The limit `max_in_flight = "auto"` starts from, within the bounds.
            auto_initial: u32 as Count, e.g. 50, default = 20;
            /// Refuse while this fn's recent mean latency is above it. Named without `max_lag`, it turns the lag check off.
            /// Above zero.
            max_latency: ::core::time::Duration as Timeout, e.g. "200ms", default none "off";
        }
    };
}

too_busy_settings!(crate::table::options! {
    /// A guard's options as given; `None` where left out.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct TooBusyOptions<'a> {
        /// The guard's name, when one is given.
        pub name: Option<&'a str>,
    }
});

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use resiliency_rules::{too_busy, InFlight, TooBusyOptions};
///
/// let options = TooBusyOptions {
///     max_in_flight: Some(InFlight::Fixed(0)),
///     ..TooBusyOptions::default()
/// };
/// assert_eq!(too_busy(&options)[0].argument(), "max_in_flight");
///
/// // The bounds of a learned limit apply with `max_in_flight = "auto"` only.
/// let options = TooBusyOptions { auto_max: Some(0), ..TooBusyOptions::default() };
/// assert!(too_busy(&options).is_empty());
/// let options = TooBusyOptions { max_in_flight: Some(InFlight::Auto), ..options };
/// assert_eq!(
///     too_busy(&options)[0].to_string(),
///     "`auto_max` (0) must be at least `auto_min` (1, its default)"
/// );
/// ```
pub fn too_busy(options: &TooBusyOptions<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    name_rule(options.name, &mut out);
    above_zero("max_lag", options.max_lag, &mut out);
    if options.max_in_flight == Some(InFlight::Fixed(0)) {
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
    if o.max_in_flight != Some(InFlight::Auto) {
        return;
    }
    if o.auto_min == Some(0) {
        out.push(Violation::value(
            "auto_min",
            format!(
                "`auto_min` must be at least 1: the learned limit never goes below it, e.g. `auto_min = {}` (the default)",
                TooBusyOptions::default().auto_min()
            ),
        ));
    }
    // Each against the others as given, or their defaults where left out.
    let min = o.auto_min().max(1);
    let max = o.auto_max();
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
