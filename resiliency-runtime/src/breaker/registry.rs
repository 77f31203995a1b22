//! Breakers by name: the one place where `#[breaker]` sites and code meet.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::engine::Breaker;
use super::keyed::KeyedBreaker;

enum Entry {
    /// Leaked once per name: a registered breaker is never dropped, and a `'static` reference
    /// to it costs its users no reference count.
    Single(&'static Arc<Breaker>),
    Keyed(Arc<KeyedBreaker>),
}

static REGISTRY: RwLock<Option<HashMap<Arc<str>, Entry>>> = RwLock::new(None);

/// The registered single breaker called `name` (from `#[breaker]` or
/// [`BreakerBuilder::register`](super::BreakerBuilder::register)).
///
/// A `#[breaker]` function registers its breaker on its first call, so this is `None` before
/// then. To hold the handle earlier, register the breaker from code with the same name and
/// options; the attribute then uses that one.
pub fn get(name: &str) -> Option<Arc<Breaker>> {
    match REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(name)?
    {
        Entry::Single(b) => Some(Arc::clone(b)),
        Entry::Keyed(_) => None,
    }
}

/// The registered keyed family called `name`.
pub fn get_keyed(name: &str) -> Option<Arc<KeyedBreaker>> {
    match REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(name)?
    {
        Entry::Keyed(k) => Some(k.clone()),
        Entry::Single(_) => None,
    }
}

/// The names of every registered breaker and keyed family.
pub fn names() -> Vec<String> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|m| m.keys().map(|k| k.to_string()).collect())
        .unwrap_or_default()
}

/// The single breaker called `name`, registered by `create` if absent; `None` when the name
/// belongs to a keyed family.
pub(crate) fn single(
    name: Arc<str>,
    create: impl FnOnce() -> Arc<Breaker>,
) -> Option<&'static Arc<Breaker>> {
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    match registry
        .get_or_insert_with(HashMap::new)
        .entry(name)
        .or_insert_with(|| Entry::Single(Box::leak(Box::new(create()))))
    {
        Entry::Single(b) => Some(*b),
        Entry::Keyed(_) => None,
    }
}

/// The keyed family called `name`, registered by `create` if absent; `None` when the name belongs
/// to a single breaker.
pub(crate) fn keyed(
    name: Arc<str>,
    create: impl FnOnce() -> Arc<KeyedBreaker>,
) -> Option<Arc<KeyedBreaker>> {
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    match registry
        .get_or_insert_with(HashMap::new)
        .entry(name)
        .or_insert_with(|| Entry::Keyed(create()))
    {
        Entry::Keyed(k) => Some(k.clone()),
        Entry::Single(_) => None,
    }
}

/// Holds the registry's read lock: while it is held, nothing can register (the tower tests).
#[cfg(all(test, feature = "tower"))]
pub(crate) fn read_lock() -> impl Drop {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}
