//! Each policy's settings, declared once.
//!
//! A policy's table is a macro (`breaker_settings!`, `race_retry_settings!`,
//! `too_busy_settings!`) that hands its rows to another macro, written after the `!`:
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
//! name: Type as Kind, e.g. 3, default "3";
//! ```
//!
//! `Type` is the value a policy holds (`Option<Type>` in its options), `Kind` says how a value
//! is read and written (an attribute's literal, a value by name at run time, the expansion's
//! tokens), `e.g.` is the example the docs table and the messages show, and `default` says in
//! words what applies when the setting is left out. Each consumer maps the kinds it needs:
//! this crate declares the options structs ([`options!`](crate::table::options)), the macros
//! crate an attribute's arguments, the runtime the builder's methods and the settings by name,
//! the facade the docs table. Every row is a setting that may change at run time; the arguments
//! that are code (`name`, `key`, `count_if`, `retry_if`, `crate`) are not settings and are not
//! in a table.
//!
//! The kinds: `Count` (a `u32` from 1), `Keys` (a `usize` from 1), `Number` and `Factor` (an
//! `f64`), `Duration`, `Timeout` (a `Duration`, or `"off"` at run time for none), `After`,
//! `Budget`, `Backoff` and `InFlight` (the enums of this crate).

/// Declares a policy's options struct: the fields written before the rows, then one
/// `pub name: Option<Type>` per row, and `SETTINGS`, the rows' names in order.
macro_rules! options {
    (
        $(#[$attr:meta])*
        pub struct $name:ident<'a> { $($fields:tt)* }
        $(
            $(#[doc = $doc:literal])*
            $setting:ident: $ty:ty as $kind:ident, e.g. $example:literal, default $default:literal;
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
        }
    };
}
pub(crate) use options;
