//! The rules of a time limit's options (`#[timeout(...)]`, `Timeout::builder`).

use crate::{above_zero, name_rule, Violation};

/// `#[timeout]`'s settings: the table that the attribute's arguments, the builder's methods, the
/// settings by name and the docs come from (see the crate's `table` module).
#[macro_export]
#[doc(hidden)]
macro_rules! timeout_settings {
    ($($then:ident)::+ ! { $($before:tt)* }) => {
        $($then)::+! { $($before)*
            /// How long one call may take: then its body is dropped and the call returns `Err(E::from(Rejected))` (`Rejected::is_timeout`).
            /// Above zero. Required (`#[timeout("2s")]` is short for `#[timeout(total = "2s")]`).
            total: ::core::time::Duration as Duration, e.g. "2s", default none "required";
        }
    };
}

timeout_settings!(crate::table::options! {
    /// A time limit's options as given; `None` where left out.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct TimeoutOptions<'a> {
        /// The time limit's name, when one is given.
        pub name: Option<&'a str>,
        /// Arguments written whose value could not be read (malformed, or an expression checked
        /// at first use): they count as given.
        pub written: &'a [&'a str],
    }
});

/// Every rule `options` breaks, in argument order.
///
/// ```
/// use std::time::Duration;
/// use resiliency_rules::{timeout, About, TimeoutOptions};
///
/// let violations = timeout(&TimeoutOptions::default());
/// assert_eq!((violations[0].argument(), violations[0].about()), ("total", About::Presence));
///
/// let options = TimeoutOptions { total: Some(Duration::ZERO), ..TimeoutOptions::default() };
/// assert_eq!(timeout(&options)[0].to_string(), "`total` must be above zero, e.g. `total = \"450ms\"`");
/// ```
pub fn timeout(options: &TimeoutOptions<'_>) -> Vec<Violation> {
    let o = options;
    let mut out = Vec::new();
    name_rule(o.name, &mut out);
    if o.total.is_none() && !o.written.contains(&"total") {
        out.push(Violation::presence(
            "total",
            "`total` is required: how long one call may take, such as `#[timeout(\"2s\")]` or `#[timeout(total = \"2s\")]`",
        ));
    }
    above_zero("total", o.total, &mut out);
    out
}
