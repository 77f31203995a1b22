//! [`Value`]: one setting's value as code, a file or the environment gives it, and how each kind
//! of setting reads it.

use std::fmt;
use std::time::Duration;

/// The value of one setting, as code, a configuration file or an environment variable gives it.
///
/// Each setting reads the kinds that make sense for it: a count (`error_threshold`) takes a whole
/// number or a text that is one (`"5"`, as environment variables are); a number (`capacity`) any
/// number; a duration (`timeout`) a [`Duration`] or a text such as `"450ms"`, `"1.5s"`, `"2m"`
/// (the attribute's syntax). A few settings take words: `"off"` for `timeout`, `budget` and the
/// like, `"p95"` for `after`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A whole number.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A text: a duration such as `"2s"`, a number written as text, or a word such as `"off"`.
    Text(String),
    /// A duration.
    Duration(Duration),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Text(text) => write!(f, "{text:?}"),
            Value::Duration(d) => write!(f, "{d:?}"),
        }
    }
}

impl Value {
    /// The value as a duration: a [`Duration`], or a text in the attribute's syntax (`"450ms"`).
    /// `None` for `"off"` and for a value that is not a duration.
    pub fn duration(&self) -> Option<Duration> {
        duration("", self).ok()
    }

    /// The value as a finite number: a number, or a text that is one (`"0.75"`).
    pub fn number(&self) -> Option<f64> {
        number("", self).ok()
    }

    /// The value as a whole number from 0: a whole number, or a text that is one (`"5"`).
    pub fn count(&self) -> Option<u64> {
        whole("", self).ok()
    }

    /// Whether the value is `"off"` (any case): the setting is switched off.
    pub fn is_off(&self) -> bool {
        is_off(self)
    }

    /// The same value, floats compared by their bits (so that NaN is the same as itself).
    pub(crate) fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            _ => self == other,
        }
    }

    /// The value as messages write it inside a sentence: texts without quotes.
    pub(crate) fn plain(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Self {
                Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
            }
        }
    )*};
}
from_int!(u8, u16, u32, u64, usize, i8, i16, i32, i64);

impl From<f64> for Value {
    fn from(x: f64) -> Self {
        Value::Float(x)
    }
}

impl From<f32> for Value {
    fn from(x: f32) -> Self {
        Value::Float(f64::from(x))
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Value::Text(text.to_owned())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Value::Text(text)
    }
}

impl From<Duration> for Value {
    fn from(d: Duration) -> Self {
        Value::Duration(d)
    }
}

/// A value that reads as `"off"` (any case): the setting is switched off.
pub(crate) fn is_off(value: &Value) -> bool {
    matches!(value, Value::Text(text) if text.trim().eq_ignore_ascii_case("off"))
}

/// A count such as `error_threshold`: a whole number from 0 to `u32::MAX`.
pub(crate) fn count(setting: &str, value: &Value) -> Result<u32, String> {
    let n = whole(setting, value)?;
    u32::try_from(n).map_err(|_| {
        format!(
            "`{setting}` must be a whole number from 0 to {}, got {value}",
            u32::MAX
        )
    })
}

/// A whole number from 0 to `u64::MAX`.
pub(crate) fn whole(setting: &str, value: &Value) -> Result<u64, String> {
    let expected = || format!("`{setting}` must be a whole number, got {value}");
    match value {
        Value::Int(n) => u64::try_from(*n).map_err(|_| expected()),
        Value::Text(text) => text.trim().parse::<u64>().map_err(|_| expected()),
        Value::Float(x) if x.fract() == 0.0 && *x >= 0.0 && *x < u64::MAX as f64 => Ok(*x as u64),
        _ => Err(expected()),
    }
}

/// A number such as `capacity`: finite (NaN and the infinities are refused).
pub(crate) fn number(setting: &str, value: &Value) -> Result<f64, String> {
    let expected = || format!("`{setting}` must be a number, got {value}");
    let x = match value {
        Value::Int(n) => *n as f64,
        Value::Float(x) => *x,
        Value::Text(text) => text.trim().parse::<f64>().map_err(|_| expected())?,
        Value::Duration(_) => return Err(expected()),
    };
    if !x.is_finite() {
        return Err(format!("`{setting}` must be a finite number, got {value}"));
    }
    Ok(x)
}

/// A duration such as `timeout`: a [`Duration`], or a text in the attribute's syntax.
pub(crate) fn duration(setting: &str, value: &Value) -> Result<Duration, String> {
    match value {
        Value::Duration(d) => Ok(*d),
        Value::Text(text) => resiliency_rules::parse_duration(text)
            .map_err(|why| format!("`{setting}` must be a duration such as \"2s\": {why}")),
        _ => Err(format!(
            "`{setting}` must be a duration such as \"2s\" or \"150ms\", got {value}"
        )),
    }
}

/// An optional duration: `"off"` for none.
pub(crate) fn duration_or_off(setting: &str, value: &Value) -> Result<Option<Duration>, String> {
    if is_off(value) {
        return Ok(None);
    }
    duration(setting, value).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_what_files_and_variables_write() {
        assert_eq!(count("n", &Value::Int(5)), Ok(5));
        assert_eq!(count("n", &"5".into()), Ok(5));
        assert_eq!(count("n", &Value::Float(5.0)), Ok(5));
        assert!(count("n", &Value::Int(-1)).is_err());
        assert!(count("n", &Value::Float(2.5))
            .unwrap_err()
            .contains("whole number"));
        assert_eq!(number("x", &"0.75".into()), Ok(0.75));
        assert_eq!(number("x", &Value::Int(1)), Ok(1.0));
        assert_eq!(
            number("x", &"nan".into()).unwrap_err(),
            "`x` must be a finite number, got \"nan\""
        );
        assert!(number("x", &Value::Float(f64::INFINITY)).is_err());
        assert!(Value::Float(f64::NAN).same(&Value::Float(f64::NAN)));
        assert_eq!(
            duration("t", &"1.5s".into()),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(
            duration("t", &Value::Int(2)).unwrap_err(),
            "`t` must be a duration such as \"2s\" or \"150ms\", got 2"
        );
        assert_eq!(
            duration("t", &"2 parsecs".into()).unwrap_err(),
            "`t` must be a duration such as \"2s\": `parsecs` is not a unit (the units are ns, us, ms, s, m, h)"
        );
        assert_eq!(duration_or_off("t", &"OFF".into()), Ok(None));
    }
}
