//! A policy's builder methods and its settings by name, made from the policy's table in
//! `resiliency_rules` (`breaker_settings!`, `race_retry_settings!`, `too_busy_settings!`): one row
//! there is one builder method here, with the row's docs, and one setting read and written by
//! name. How each kind of value is read from a [`Value`] and shown as one is [`Kind`]'s.

use super::value::Value;

/// The builder methods of `$builder` and its settings by name ([`ByName`]), whose field
/// `$options` holds the rules' options struct: one of each per row of the table that follows.
macro_rules! builder {
    (
        $builder:ident.$options:ident;
        $(
            $(#[doc = $doc:literal])*
            $setting:ident: $ty:ty as $kind:ident, e.g. $example:literal, default $how:tt $default:expr;
        )*
    ) => {
        impl $builder {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Default: ", resiliency_rules::default_words!($how $default), ".")]
                pub fn $setting(mut self, value: $crate::options::table::param!($kind, $ty)) -> Self {
                    self.$options.$setting = Some(value.into());
                    self
                }
            )*
        }

        /// Read and written by name through its options ([`by_name!`]).
        impl $crate::options::table::ByName for $builder {
            fn get(&self, setting: &str) -> Option<$crate::options::Value> {
                $crate::options::table::ByName::get(&self.$options, setting)
            }

            fn set(
                &mut self,
                setting: &'static str,
                value: &$crate::options::Value,
            ) -> Result<(), String> {
                $crate::options::table::ByName::set(&mut self.$options, setting, value)
            }

            fn unset(&mut self, setting: &str) {
                $crate::options::table::ByName::unset(&mut self.$options, setting)
            }
        }
    };
}
pub(crate) use builder;

/// The settings by name ([`ByName`]) of a rules' options struct `$options`, of the policy called
/// `$policy`: one per row of the table that follows. What a builder's settings by name go
/// through, and what a value given alone is judged with ([`Policy`](super::Policy)'s).
macro_rules! by_name {
    (
        $options:ty => $policy:ident;
        $(
            $(#[doc = $doc:literal])*
            $setting:ident: $ty:ty as $kind:ident, e.g. $example:literal, default $how:tt $default:expr;
        )*
    ) => {
        impl $crate::options::table::ByName for $options {
            fn get(&self, setting: &str) -> Option<$crate::options::Value> {
                use $crate::options::table::Kind as _;
                match setting {
                    $(stringify!($setting) => self
                        .$setting
                        .map($crate::options::table::kind::$kind::show),)*
                    _ => None,
                }
            }

            fn set(
                &mut self,
                setting: &'static str,
                value: &$crate::options::Value,
            ) -> Result<(), String> {
                use $crate::options::table::Kind as _;
                match setting {
                    $(stringify!($setting) => {
                        self.$setting = $crate::options::table::kind::$kind::read(setting, value)?;
                    })*
                    _ => {
                        return Err(format!(
                            "`{setting}` is not a {} setting",
                            stringify!($policy)
                        ))
                    }
                }
                Ok(())
            }

            fn unset(&mut self, setting: &str) {
                match setting {
                    $(stringify!($setting) => self.$setting = None,)*
                    _ => {}
                }
            }
        }
    };
}
pub(crate) use by_name;

/// The type a builder method of kind `$kind` takes: the value itself, or for the enums anything
/// that converts into one (`.after(Duration::from_millis(150))`, `.budget(0.1)`,
/// `.max_in_flight(256)`).
macro_rules! param {
    (After, $ty:ty) => { impl Into<$ty> };
    (Budget, $ty:ty) => { impl Into<$ty> };
    (Backoff, $ty:ty) => { impl Into<$ty> };
    (InFlight, $ty:ty) => { impl Into<$ty> };
    (Rate, $ty:ty) => { impl Into<$ty> };
    ($kind:ident, $ty:ty) => { $ty };
}
pub(crate) use param;

/// A policy's options read and written setting by setting (made by [`by_name!`], and for a
/// builder by [`builder!`]).
pub(crate) trait ByName {
    /// The value given for `setting`, if any.
    fn get(&self, setting: &str) -> Option<Value>;
    /// Gives `setting` a value (`"off"` leaves out one that may be off); `Err` says why the value
    /// is not one for it.
    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String>;
    /// Leaves `setting` out: its default applies.
    fn unset(&mut self, setting: &str);
}

/// How a setting of one kind is read from a [`Value`] (files, variables, code) and shown as one.
pub(crate) trait Kind {
    /// The value a policy holds.
    type Of;

    /// The value for `setting`: `None` for `"off"` where the setting may be off (left out).
    fn read(setting: &'static str, value: &Value) -> Result<Option<Self::Of>, String>;

    /// The value as settings show it.
    fn show(value: Self::Of) -> Value;
}

/// The kinds of the tables' rows.
#[allow(unreachable_pub)]
pub(crate) mod kind {
    use resiliency_rules as rules;

    use super::Kind;
    use crate::options::value::{count, duration, duration_or_off, is_off, number, whole, Value};

    /// A count such as `error_threshold`.
    pub(crate) struct Count;

    impl Kind for Count {
        type Of = u32;
        fn read(setting: &'static str, value: &Value) -> Result<Option<u32>, String> {
            count(setting, value).map(Some)
        }
        fn show(value: u32) -> Value {
            Value::from(value)
        }
    }

    /// A number of keys (`max_keys`).
    pub(crate) struct Keys;

    impl Kind for Keys {
        type Of = usize;
        fn read(setting: &'static str, value: &Value) -> Result<Option<usize>, String> {
            let keys = whole(setting, value)?;
            Ok(Some(usize::try_from(keys).unwrap_or(usize::MAX)))
        }
        fn show(value: usize) -> Value {
            Value::Int(i64::try_from(value).unwrap_or(i64::MAX))
        }
    }

    /// A number such as `capacity`.
    pub(crate) struct Number;

    impl Kind for Number {
        type Of = f64;
        fn read(setting: &'static str, value: &Value) -> Result<Option<f64>, String> {
            number(setting, value).map(Some)
        }
        fn show(value: f64) -> Value {
            Value::from(value)
        }
    }

    /// A factor such as `backoff_factor` (a number; the rules bound it).
    pub(crate) type Factor = Number;

    /// A duration such as `error_timeout`.
    pub(crate) struct Duration;

    impl Kind for Duration {
        type Of = std::time::Duration;
        fn read(
            setting: &'static str,
            value: &Value,
        ) -> Result<Option<std::time::Duration>, String> {
            duration(setting, value).map(Some)
        }
        fn show(value: std::time::Duration) -> Value {
            Value::from(value)
        }
    }

    /// A bound that may be off, such as `timeout`: a duration, or `"off"` for none.
    pub(crate) struct Timeout;

    impl Kind for Timeout {
        type Of = std::time::Duration;
        fn read(
            setting: &'static str,
            value: &Value,
        ) -> Result<Option<std::time::Duration>, String> {
            duration_or_off(setting, value)
        }
        fn show(value: std::time::Duration) -> Value {
            Value::from(value)
        }
    }

    /// `after`: a duration, or a percentile as the attribute writes it (`"p95"`, `"p99.9"`).
    pub(crate) struct After;

    impl Kind for After {
        type Of = rules::After;
        fn read(setting: &'static str, value: &Value) -> Result<Option<rules::After>, String> {
            let expected = || {
                format!("`{setting}` must be a duration such as \"150ms\" or a percentile such as \"p95\", got {value}")
            };
            if let Value::Text(text) = value {
                if let Some(percent) = text.trim().strip_prefix('p') {
                    return match percent.parse::<f64>() {
                        Ok(percent) => Ok(Some(rules::After::Percentile(percent / 100.0))),
                        Err(_) => Err(expected()),
                    };
                }
            }
            duration(setting, value)
                .map(|d| Some(rules::After::Fixed(d)))
                .map_err(|_| expected())
        }
        fn show(value: rules::After) -> Value {
            match value {
                rules::After::Fixed(d) => Value::from(d),
                rules::After::Percentile(q) => Value::Text(format!("p{}", q * 100.0)),
            }
        }
    }

    /// `budget`: a share, or `"off"` for no budget.
    pub(crate) struct Budget;

    impl Kind for Budget {
        type Of = rules::Budget;
        fn read(setting: &'static str, value: &Value) -> Result<Option<rules::Budget>, String> {
            if is_off(value) {
                return Ok(Some(rules::Budget::Off));
            }
            number(setting, value).map(|share| Some(rules::Budget::Share(share)))
        }
        fn show(value: rules::Budget) -> Value {
            match value {
                rules::Budget::Share(share) => Value::from(share),
                rules::Budget::Off => Value::from("off"),
            }
        }
    }

    /// `backoff`: a duration, or `"off"` for none.
    pub(crate) struct Backoff;

    impl Kind for Backoff {
        type Of = rules::Backoff;
        fn read(setting: &'static str, value: &Value) -> Result<Option<rules::Backoff>, String> {
            if is_off(value) {
                return Ok(Some(rules::Backoff::Off));
            }
            duration(setting, value).map(|base| Some(rules::Backoff::Base(base)))
        }
        fn show(value: rules::Backoff) -> Value {
            match value {
                rules::Backoff::Base(base) => Value::from(base),
                rules::Backoff::Off => Value::from("off"),
            }
        }
    }

    /// `max_in_flight`: a limit, `"auto"` to learn it, or `"off"` for none.
    pub(crate) struct InFlight;

    impl Kind for InFlight {
        type Of = rules::InFlight;
        fn read(setting: &'static str, value: &Value) -> Result<Option<rules::InFlight>, String> {
            match value {
                value if is_off(value) => Ok(None),
                Value::Text(text) if text.trim().eq_ignore_ascii_case("auto") => {
                    Ok(Some(rules::InFlight::Auto))
                }
                value => count(setting, value)
                    .map(|limit| Some(rules::InFlight::Fixed(limit)))
                    .map_err(|e| format!("{e}, \"auto\" to learn it, or \"off\" for no limit")),
            }
        }
        fn show(value: rules::InFlight) -> Value {
            match value {
                rules::InFlight::Fixed(limit) => Value::from(limit),
                rules::InFlight::Auto => Value::from("auto"),
            }
        }
    }

    /// `rate`: calls per period, as the attribute writes it (`"100/s"`, `"10/100ms"`).
    pub(crate) struct Rate;

    impl Kind for Rate {
        type Of = rules::Rate;
        fn read(setting: &'static str, value: &Value) -> Result<Option<rules::Rate>, String> {
            match value {
                Value::Text(text) => rules::parse_rate(text)
                    .map(Some)
                    .map_err(|e| format!("`{setting}`: {e}")),
                other => Err(format!(
                    "`{setting}` must be a rate such as \"100/s\", got {other}"
                )),
            }
        }
        fn show(value: rules::Rate) -> Value {
            Value::Text(value.to_string())
        }
    }
}
