//! What an upstream asked for: how long to wait before calling it again (`Retry-After`).
//!
//! An error or a response that knows how long its upstream asked callers to wait implements
//! [`RetryHint`]. The policies read it where they can: a raced call's next attempt waits at least
//! that long (never past its `total`), and a breaker that opens on such errors stays open at least
//! that long. `#[race_retry]` and `#[breaker]` read the hint of any error type that implements
//! the trait, with no argument to write; code that calls the engines directly passes the hint
//! with the methods that say so.
//!
//! ```
//! use std::time::Duration;
//! use resiliency::RetryHint;
//!
//! /// An upstream's error, with the wait its `Retry-After` header asked for.
//! #[derive(Debug)]
//! enum ApiError {
//!     Throttled { retry_after: Duration },
//!     Down,
//! }
//!
//! impl RetryHint for ApiError {
//!     fn retry_after(&self) -> Option<Duration> {
//!         match self {
//!             ApiError::Throttled { retry_after } => Some(*retry_after),
//!             ApiError::Down => None,
//!         }
//!     }
//! }
//!
//! let throttled = ApiError::Throttled { retry_after: Duration::from_secs(2) };
//! assert_eq!(throttled.retry_after(), Some(Duration::from_secs(2)));
//! assert_eq!(ApiError::Down.retry_after(), None);
//! ```

use std::time::Duration;

use crate::Rejected;

/// How long the upstream asked callers to wait before the next call, when it said.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say how long its upstream asked callers to wait",
    label = "`call_hinted` and `run_hinted` read this error type's `RetryHint`",
    note = "implement `resiliency::RetryHint` for `{Self}` (return `None` for the errors that say nothing), or call `call` / `run`, which read no hint"
)]
pub trait RetryHint {
    /// The wait asked for, if any.
    fn retry_after(&self) -> Option<Duration>;
}

/// A refusal's hint: for an open breaker, the time until it half-opens
/// ([`Rejected::retry_after`]).
impl RetryHint for Rejected {
    fn retry_after(&self) -> Option<Duration> {
        Rejected::retry_after(self)
    }
}

/// The hint of a [`Rejected`] inside a boxed error (found as [`Rejected::find_in`] finds it): so
/// `Box<dyn Error + Send + Sync>` errors carry an inner breaker's time until it half-opens.
impl RetryHint for dyn std::error::Error + Send + Sync + 'static {
    fn retry_after(&self) -> Option<Duration> {
        Rejected::find_in(self)?.retry_after()
    }
}

/// See the impl for `dyn Error + Send + Sync`.
impl RetryHint for dyn std::error::Error + 'static {
    fn retry_after(&self) -> Option<Duration> {
        Rejected::find_in(self)?.retry_after()
    }
}

/// The hint of a [`Rejected`] inside an `anyhow::Error` ([`Rejected::find_in_anyhow`]).
#[cfg(feature = "anyhow")]
#[cfg_attr(docsrs, doc(cfg(feature = "anyhow")))]
impl RetryHint for anyhow::Error {
    fn retry_after(&self) -> Option<Duration> {
        Rejected::find_in_anyhow(self)?.retry_after()
    }
}

impl<T: RetryHint + ?Sized> RetryHint for &T {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<T: RetryHint + ?Sized> RetryHint for Box<T> {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<T: RetryHint + ?Sized> RetryHint for std::sync::Arc<T> {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

/// The wait a `Retry-After` header asks for: delta-seconds (`120`) or an HTTP-date in the form
/// servers send (IMF-fixdate, `Wed, 21 Oct 2015 07:28:00 GMT`; as a wait from now, zero once
/// past). `None` for anything else: the obsolete date forms, and dates written loosely (a day,
/// hour, minute or second not of two digits, a year not of four, a sign).
///
/// ```
/// use std::time::Duration;
/// use http::HeaderValue;
/// use resiliency::retry_hint::parse_retry_after;
///
/// assert_eq!(parse_retry_after(&HeaderValue::from_static("120")), Some(Duration::from_secs(120)));
/// assert_eq!(
///     parse_retry_after(&HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT")),
///     Some(Duration::ZERO), // long past
/// );
/// assert_eq!(parse_retry_after(&HeaderValue::from_static("soon")), None);
/// assert_eq!(parse_retry_after(&HeaderValue::from_static("Wed, 21 Oct 20150 07:28:00 GMT")), None);
/// ```
#[cfg(any(feature = "tower", feature = "axum"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "tower", feature = "axum"))))]
pub fn parse_retry_after(value: &http::HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64 is a wait of centuries: the largest.
        return Some(Duration::from_secs(text.parse().unwrap_or(u64::MAX)));
    }
    let at = std::time::UNIX_EPOCH.checked_add(Duration::from_secs(parse_imf_fixdate(text)?))?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// Seconds since the Unix epoch of an HTTP-date in its preferred form (IMF-fixdate, RFC 9110
/// section 5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`), the one servers send: 29 bytes, each number
/// of the digits the grammar gives it (`2DIGIT` day, `4DIGIT` year, `2DIGIT` hour, minute and
/// second), from 1970 on.
#[cfg(any(feature = "tower", feature = "axum"))]
fn parse_imf_fixdate(text: &str) -> Option<u64> {
    const WEEKDAYS: [&[u8]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    //  0    5  8   12   17 20 23 26
    let text = text.as_bytes();
    if text.len() != 29 {
        return None;
    }
    let separators = [(3, b','), (4, b' '), (7, b' '), (11, b' '), (16, b' ')];
    let clock = [(19, b':'), (22, b':'), (25, b' ')];
    if !separators
        .iter()
        .chain(&clock)
        .all(|&(at, byte)| text[at] == byte)
        || !WEEKDAYS.contains(&&text[0..3])
        || &text[26..] != b"GMT"
    {
        return None;
    }
    let day = digits(&text[5..7])?;
    let month = MONTHS.iter().position(|m| *m == &text[8..11])? as u64 + 1;
    let year = digits(&text[12..16])?;
    let (hour, minute, second) = (
        digits(&text[17..19])?,
        digits(&text[20..22])?,
        digits(&text[23..25])?,
    );
    if !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 || year < 1970 {
        return None;
    }
    // Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm, years from March).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let year_of_era = y % 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = (era * 146_097 + day_of_era).checked_sub(719_468)?;
    days.checked_mul(86_400)?
        .checked_add(hour * 3_600 + minute * 60 + second)
}

/// The number written with `text`, ASCII digits only (no sign, no space); at most 4 of them here.
#[cfg(any(feature = "tower", feature = "axum"))]
fn digits(text: &[u8]) -> Option<u64> {
    text.iter().try_fold(0, |n: u64, &byte| {
        byte.is_ascii_digit()
            .then(|| n * 10 + u64::from(byte - b'0'))
    })
}

/// A response's `Retry-After` header (a 503 or a 429 saying when to come back), read by
/// [`parse_retry_after`].
#[cfg(any(feature = "tower", feature = "axum"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "tower", feature = "axum"))))]
impl<B> RetryHint for http::Response<B> {
    fn retry_after(&self) -> Option<Duration> {
        parse_retry_after(self.headers().get(http::header::RETRY_AFTER)?)
    }
}

/// The generated code's reader of the hint of an error of type `$error` (a type the user's code
/// names, so that the choice below is made there): a closure `|&$error| -> Option<Duration>`.
#[doc(hidden)]
#[macro_export]
macro_rules! __resiliency_hint_reader {
    ($error:ty) => {
        |error: &$error| {
            #[allow(unused_imports)]
            use $crate::__private::{NoHint as _, ReadsHint as _};
            #[allow(clippy::needless_borrow)]
            (&$crate::__private::HintOf(error)).hint()
        }
    };
}

/// The generated code's reader of an error's hint: [`RetryHint::retry_after`] for a type that
/// implements it, `None` for any other, chosen where the type is known (the user's fn), so that
/// no bound is asked of error types. `(&HintOf(&error)).hint()`.
#[doc(hidden)]
#[derive(Debug)]
pub struct HintOf<'a, E: ?Sized>(pub &'a E);

/// The hint of a type that implements [`RetryHint`].
#[doc(hidden)]
pub trait ReadsHint {
    fn hint(&self) -> Option<Duration>;
}

impl<E: RetryHint + ?Sized> ReadsHint for HintOf<'_, E> {
    #[inline(always)]
    fn hint(&self) -> Option<Duration> {
        self.0.retry_after()
    }
}

/// No hint for a type that does not implement [`RetryHint`].
#[doc(hidden)]
pub trait NoHint {
    #[inline(always)]
    fn hint(&self) -> Option<Duration> {
        None
    }
}

impl<E: ?Sized> NoHint for &HintOf<'_, E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(feature = "tower", feature = "axum"))]
    #[test]
    fn imf_fixdates_are_read_and_anything_else_is_not() {
        assert_eq!(
            parse_imf_fixdate("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_imf_fixdate("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_imf_fixdate("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(951_825_600)
        );
        assert_eq!(parse_imf_fixdate("Sun, 06 Nov 1994 08:49:37 UTC"), None);
        assert_eq!(parse_imf_fixdate("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_imf_fixdate("Sun, 06 Foo 1994 08:49:37 GMT"), None);
        assert_eq!(parse_imf_fixdate("Sun, 06 Nov 1994 08:49 GMT"), None);
        assert_eq!(parse_imf_fixdate(""), None);
    }

    /// RFC 9110's grammar: two digits for the day and each part of the time, four for the
    /// year, a weekday's name, ASCII digits with no sign.
    #[cfg(any(feature = "tower", feature = "axum"))]
    #[test]
    fn imf_fixdates_are_read_strictly() {
        assert_eq!(
            parse_imf_fixdate("Fri, 31 Dec 9999 23:59:60 GMT"),
            Some(253_402_300_800)
        );
        for loose in [
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 006 Nov 1994 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov +994 08:49:37 GMT",
            "Sun, 06 Nov 01994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 +8:49:37 GMT",
            "Sun, 06 Nov 1994 08:+9:37 GMT",
            "Sun, 06 Nov 1994 08:49:+7 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sun, 06 Nov 1994 08:49:37  GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sun,06 Nov 1994 08:49:37 GMT ",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Wed, 31 Dec 1969 23:59:59 GMT",
            "Sun, \u{664}\u{666} Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_imf_fixdate(loose), None, "{loose:?}");
        }
    }

    /// A year of 300 billion (past a `SystemTime`'s range) is not a `4DIGIT` year: no date, and
    /// no overflow.
    #[cfg(any(feature = "tower", feature = "axum"))]
    #[test]
    fn a_year_of_twelve_digits_is_no_date() {
        let header = http::HeaderValue::from_static("Wed, 21 Oct 300000000000 07:28:00 GMT");
        assert_eq!(parse_retry_after(&header), None);
    }

    #[derive(Debug)]
    struct Throttled;

    impl RetryHint for Throttled {
        fn retry_after(&self) -> Option<Duration> {
            Some(Duration::from_secs(3))
        }
    }

    #[derive(Debug)]
    struct Plain;

    #[test]
    // The borrow chooses the method (autoref specialization), as in generated code.
    #[allow(clippy::needless_borrow)]
    fn the_probe_reads_a_hint_where_there_is_one() {
        #[allow(unused_imports)]
        use super::{NoHint as _, ReadsHint as _};
        assert_eq!((&HintOf(&Throttled)).hint(), Some(Duration::from_secs(3)));
        assert_eq!((&HintOf(&Plain)).hint(), None);
        assert_eq!(
            (&HintOf(&Box::new(Throttled))).hint(),
            Some(Duration::from_secs(3))
        );
    }
}
