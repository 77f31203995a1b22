//! [`BreakerKey`]: what can key a breaker of a family, and the stack buffer that formats a key
//! that is not a string.

use std::fmt::{self, Display, Write as _};
use std::sync::Arc;

/// A value that can key a breaker: its text names the breaker.
///
/// String types lend their text as it is (no copy, no formatting); numbers, addresses, `char`,
/// `bool` and `format_args!(..)` are formatted on the stack. For another type, key by a string
/// (`key = user.id.as_str()`, `key = x.to_string()`) or implement this trait with
/// [`BreakerKey::display`]:
///
/// ```
/// use std::fmt;
/// use resiliency::breaker::BreakerKey;
///
/// struct Region(u8);
/// impl fmt::Display for Region {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { write!(f, "region-{}", self.0) }
/// }
/// impl BreakerKey for Region {
///     fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
///         Self::display(self, f)
///     }
/// }
/// assert_eq!(Region(3).with_text(str::len), 8);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot key a breaker",
    label = "the key's text names its breaker",
    note = "keys are strings, numbers, addresses, `char`, `bool` or `format_args!(..)`; use e.g. `key = x.to_string()` (for an `Option`, a key for `None` too: `key = x.unwrap_or(\"none\")`), or implement `resiliency::breaker::BreakerKey`"
)]
pub trait BreakerKey {
    /// Calls `f` with the key's text.
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R;

    /// Formats `key` on the stack (spilling to the heap past 96 bytes) and calls `f` with it: the
    /// body of `with_text` for a `Display` type.
    fn display<R>(key: &(impl Display + ?Sized), f: impl FnOnce(&str) -> R) -> R
    where
        Self: Sized,
    {
        let text = KeyText::of(key);
        f(text.as_str())
    }
}

impl BreakerKey for str {
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        f(self)
    }
}

impl<K: BreakerKey + ?Sized> BreakerKey for &K {
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        (**self).with_text(f)
    }
}

impl<K: BreakerKey + ?Sized> BreakerKey for &mut K {
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        (**self).with_text(f)
    }
}

macro_rules! string_keys {
    ($($ty:ty),*) => {$(
        impl BreakerKey for $ty {
            fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
                f(self)
            }
        }
    )*};
}

string_keys!(
    String,
    Box<str>,
    Arc<str>,
    std::rc::Rc<str>,
    std::borrow::Cow<'_, str>
);

macro_rules! display_keys {
    ($($ty:ty),*) => {$(
        impl BreakerKey for $ty {
            fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
                let text = KeyText::of(self);
                f(text.as_str())
            }
        }
    )*};
}

display_keys!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    char,
    bool,
    std::net::IpAddr,
    std::net::Ipv4Addr,
    std::net::Ipv6Addr,
    std::net::SocketAddr,
    std::net::SocketAddrV4,
    std::net::SocketAddrV6,
    fmt::Arguments<'_>
);

/// A key's text, formatted on the stack when it fits.
struct KeyText {
    buf: [u8; 96],
    len: usize,
    spill: Option<String>,
}

impl KeyText {
    fn of<K: Display + ?Sized>(key: &K) -> Self {
        let mut text = KeyText {
            buf: [0; 96],
            len: 0,
            spill: None,
        };
        let _ = write!(text, "{key}");
        text
    }

    fn as_str(&self) -> &str {
        match &self.spill {
            Some(s) => s,
            // Only whole `&str`s are ever copied in, so the bytes are UTF-8.
            None => std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default(),
        }
    }
}

impl fmt::Write for KeyText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(spill) = &mut self.spill {
            spill.push_str(s);
        } else if self.len + s.len() <= self.buf.len() {
            self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
            self.len += s.len();
        } else {
            let mut spill = String::with_capacity(self.len + s.len());
            spill.push_str(self.as_str());
            spill.push_str(s);
            self.spill = Some(spill);
        }
        Ok(())
    }
}

/// A key as a breaker of a family holds it: in place when it is short (most host names,
/// addresses and ids), so that a lookup compares it on the line it reads anyway; behind an
/// `Arc<str>` otherwise.
#[derive(Clone)]
pub(crate) struct Key(Repr);

/// Bytes a key keeps in place: a `Key` is then as large as an `Option<Arc<str>>` and a word.
const INLINE: usize = 22;

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Shared(Arc<str>),
}

impl Key {
    pub(crate) fn new(text: &str) -> Key {
        match u8::try_from(text.len()) {
            Ok(len) if text.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..text.len()].copy_from_slice(text.as_bytes());
                Key(Repr::Inline { len, bytes })
            }
            _ => Key(Repr::Shared(Arc::from(text))),
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Shared(text) => text.as_bytes(),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            // Only whole `&str`s are ever copied in, so the bytes are UTF-8.
            Repr::Inline { .. } => std::str::from_utf8(self.as_bytes()).unwrap_or_default(),
            Repr::Shared(text) => text,
        }
    }

    pub(crate) fn to_arc(&self) -> Arc<str> {
        match &self.0 {
            Repr::Inline { .. } => Arc::from(self.as_str()),
            Repr::Shared(text) => text.clone(),
        }
    }
}

impl From<&str> for Key {
    fn from(text: &str) -> Key {
        Key::new(text)
    }
}

impl std::ops::Deref for Key {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_three_words_and_keeps_its_text_whatever_its_length() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        for len in [0, 1, INLINE - 1, INLINE, INLINE + 1, 300] {
            let text: String = "é-".repeat(len).chars().take(len).collect();
            let key = Key::new(&text);
            assert_eq!(key.as_str(), text);
            assert_eq!(key.as_bytes(), text.as_bytes());
            assert_eq!(&*key.to_arc(), text);
            assert_eq!(key.to_string(), text);
        }
    }
}
