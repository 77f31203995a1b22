//! Each policy's settings, declared once.
//!
//! A policy's table is a macro (`breaker_settings!`, `race_retry_settings!`,
//! `too_busy_settings!`, `timeout_settings!`, `rate_limit_settings!`) that hands its rows to another macro, written after the `!`:
//!
//! ```text
//! resiliency_rules::breaker_settings!(path::to::consumer! { tokens the consumer wants first });
//! ```
//!
//! expands to `path::to::consumer! { tokens the consumer wants first <rows> }`, one row per
//! setting:
//!
//! ```text
//! /// What it does, in one line: the docs table's cell and the builder method's first line.
//! /// More lines, for the builder method only.
//! name: Type as Kind, e.g. 5, default = 3;
//! ```
//!
//! `Type` is the value a policy holds (`Option<Type>` in its options), `Kind` says how a value
//! is read and written (an attribute's literal, a value by name at run time, the expansion's
//! tokens), and `e.g.` is the example the docs table and the messages show. The default is one
//! of:
//!
//! * `default = 3`, `default = "10s"`, `default = "p95"`: a fixed value, written as the
//!   attribute writes it. It is read into a `Type` at compile time, and the options struct
//!   ([`options!`]) gets an accessor of the setting's name that gives the value in force, the
//!   one given or this default (`options.error_threshold()`, beside the field
//!   `options.error_threshold`, the value as given).
//! * `default derived "words"`: computed from other settings, as the words say. The words may be
//!   a `concat!` of literals and of macros that expand to one, so that a number that the code
//!   computing the default uses too is written once (`max_error_timeout`'s).
//! * `default none "words"`: when left out, the setting is off (or, for `total`, required); the
//!   words say what that means.
//!
//! A consumer matches a row's default as `default $how:tt $default:expr` and shows it with
//! [`default_words!`](crate::default_words): the docs' words of every kind of default.
//!
//! Each consumer maps the kinds it needs: this crate declares the options structs
//! ([`options!`](crate::table::options)), the macros crate an attribute's arguments, the runtime
//! the builder's methods and the settings by name, the facade the docs table. Every row is a
//! setting that may change at run time; the arguments that are code (`name`, `key`, `count_if`,
//! `retry_if`, `crate`) are not settings and are not in a table.
//!
//! The kinds: `Count` (a `u32` from 1), `Keys` (a `usize` from 1), `Number` and `Factor` (an
//! `f64`), `Duration`, `Timeout` (a `Duration`, or `"off"` at run time for none), `After`,
//! `Budget`, `Backoff` and `InFlight` (the enums of this crate), and `Rate` (a [`Rate`](crate::Rate),
//! written `"100/s"`).

use std::time::Duration;

use crate::duration::UNITS;
use crate::After;

/// Declares a policy's options struct: the fields written before the rows, then one
/// `pub name: Option<Type>` per row; `SETTINGS`, the rows' names in order; for each row with a
/// fixed default, a method of the setting's name that gives the value in force
/// ([`in_force!`]); and `or_defaults`, the options with every fixed default filled in.
macro_rules! options {
    (
        $(#[$attr:meta])*
        pub struct $name:ident<'a> { $($fields:tt)* }
        $(
            $(#[doc = $doc:literal])*
            $setting:ident: $ty:ty as $kind:ident, e.g. $example:literal, default $how:tt $default:expr;
        )*
    ) => {
        $(#[$attr])*
        pub struct $name<'a> {
            $($fields)*
            $(
                $(#[doc = $doc])*
                pub $setting: Option<$ty>,
            )*
        }

        impl $name<'_> {
            /// The settings, in the order of the attribute's documentation.
            pub const SETTINGS: &'static [&'static str] = &[$(stringify!($setting)),*];

            $($crate::table::in_force!($setting: $ty as $kind, default $how $default);)*

            /// These options with every setting that has a fixed default given: its value as
            /// given, or else its default. Two sets of options that differ only in giving a
            /// fixed default or leaving it out are the same once both are filled in.
            pub fn or_defaults(&self) -> Self {
                Self {
                    $($setting: $crate::table::or_default!($how, self.$setting, self.$setting()),)*
                    ..self.clone()
                }
            }
        }
    };
}
pub(crate) use options;

/// For a row with a fixed default, the accessor of its value in force: the value given, or the
/// default, read into its type at compile time ([`typed!`]). Nothing for the other rows.
macro_rules! in_force {
    ($setting:ident: $ty:ty as $kind:ident, default = $value:expr) => {
        #[doc = concat!(
                    "`", stringify!($setting), "` in force: as given, or else its default, `",
                    stringify!($value), "`."
                )]
        pub const fn $setting(&self) -> $ty {
            match self.$setting {
                Some(value) => value,
                None => const { $crate::table::typed!($kind, $value) },
            }
        }
    };
    ($setting:ident: $ty:ty as $kind:ident, default $how:ident $words:expr) => {};
}
pub(crate) use in_force;

/// A setting in [`options!`]' `or_defaults`: its value in force where its default is fixed,
/// else as given.
macro_rules! or_default {
    (=, $given:expr, $in_force:expr) => {
        Some($in_force)
    };
    ($how:ident, $given:expr, $in_force:expr) => {
        $given
    };
}
pub(crate) use or_default;

/// A fixed default of kind `$kind`, as the attribute writes it, read into the kind's type.
macro_rules! typed {
    (Count, $value:expr) => {
        $value
    };
    (Keys, $value:expr) => {
        $value
    };
    (Number, $value:expr) => {
        $value
    };
    (Factor, $value:expr) => {
        $value
    };
    (Duration, $value:expr) => {
        $crate::table::duration($value)
    };
    (Timeout, $value:expr) => {
        $crate::table::duration($value)
    };
    (After, $value:expr) => {
        $crate::table::after($value)
    };
    (Budget, $value:expr) => {
        $crate::Budget::Share($value)
    };
    (Backoff, $value:expr) => {
        $crate::Backoff::Base($crate::table::duration($value))
    };
    (InFlight, $value:expr) => {
        $crate::InFlight::Fixed($value)
    };
}
pub(crate) use typed;

/// The words of a row's default, for the docs: a fixed value as the attribute writes it (in
/// backticks), or the words of a default that is derived or none.
#[macro_export]
#[doc(hidden)]
macro_rules! default_words {
    (= $value:expr) => {
        concat!("`", stringify!($value), "`")
    };
    (derived $words:expr) => {
        $words
    };
    (none $words:expr) => {
        $words
    };
}

/// A fixed default's duration, as a table writes it: a whole number and one of
/// [`parse_duration`](crate::parse_duration)'s units, such as `"10s"`. Read at compile time:
/// anything else stops the build.
pub(crate) const fn duration(text: &str) -> Duration {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut number: u64 = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        number = match number.checked_mul(10) {
            Some(n) => n + (bytes[i] - b'0') as u64,
            None => panic!("a default duration too long"),
        };
        i += 1;
    }
    assert!(i > 0, "a default duration starts with a whole number");
    let (_, unit) = bytes.split_at(i);
    let mut u = 0;
    while u < UNITS.len() {
        let (name, nanos) = UNITS[u];
        if same(name.as_bytes(), unit) {
            return match number.checked_mul(nanos) {
                Some(ns) => Duration::from_nanos(ns),
                None => panic!("a default duration too long"),
            };
        }
        u += 1;
    }
    panic!("a default duration is a whole number and a unit, such as \"10s\"")
}

/// A fixed default of `after`, as a table writes it: a percentile such as `"p95"` or `"p99.9"`,
/// or a duration ([`duration`]). Read at compile time: anything else stops the build.
pub(crate) const fn after(text: &str) -> After {
    let [b'p', digits @ ..] = text.as_bytes() else {
        return After::Fixed(duration(text));
    };
    // The percentile as `mantissa / scale`, both exact: one division rounds it as reading the
    // number as an `f64` does.
    let (mut mantissa, mut scale, mut fraction, mut i) = (0_u64, 1_u64, false, 0);
    while i < digits.len() {
        match digits[i] {
            b'.' if !fraction && i > 0 => fraction = true,
            d if d.is_ascii_digit() && mantissa < 1 << 40 => {
                mantissa = mantissa * 10 + (d - b'0') as u64;
                if fraction {
                    scale *= 10;
                }
            }
            _ => panic!("a default percentile is \"p\" and a number, such as \"p95\""),
        }
        i += 1;
    }
    assert!(
        i > 0 && digits[i - 1] != b'.',
        "a default percentile is \"p\" and a number, such as \"p95\""
    );
    After::Percentile(mantissa as f64 / scale as f64 / 100.0)
}

/// Whether two byte strings are equal (`==` on slices is not `const`).
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_duration;

    #[test]
    fn a_default_reads_as_the_attribute_reads_it() {
        for text in ["10s", "10m", "70ms", "250us", "250µs", "3h", "1ns", "0s"] {
            assert_eq!(Ok(duration(text)), parse_duration(text), "{text}");
        }
        assert_eq!(
            after("150ms"),
            After::Fixed(parse_duration("150ms").unwrap())
        );
        // As the runtime and the macros read a percentile: its number over 100.
        for (text, number) in [
            ("p95", "95"),
            ("p99.9", "99.9"),
            ("p50", "50"),
            ("p1.25", "1.25"),
        ] {
            let expected = number.parse::<f64>().unwrap() / 100.0;
            assert_eq!(after(text), After::Percentile(expected), "{text}");
        }
    }

    #[test]
    fn a_malformed_default_is_refused() {
        for text in ["10", "s", "1.5s", "10 parsecs", "1m30s"] {
            assert!(
                std::panic::catch_unwind(|| duration(text)).is_err(),
                "{text}"
            );
        }
        for text in ["p", "p9x", "p.5", "p9..5", "p9."] {
            assert!(std::panic::catch_unwind(|| after(text)).is_err(), "{text}");
        }
    }
}
