//! Breakers by name: the one place where `#[breaker]` sites, builders and `tower` layers meet.
//! Each name keeps the options it was registered with and where they come from, so that a later
//! registration with other options is refused (a builder) or logged (an attribute's site, a
//! layer), never silent, in the words of the other policies' registry ([`crate::named`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::breaker::Breaker;
use super::builder::{
    BreakerBuilder, DEFAULT_ERROR_THRESHOLD, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_KEYS,
    DEFAULT_MIN_CALLS,
};
use super::keyed::KeyedBreaker;
use crate::named::{self, first_difference, Origin};
use crate::settings::table::ByName as _;
use crate::settings::Value;

enum Breakers {
    /// Leaked once per name: a registered breaker is never dropped, and a `'static` reference
    /// to it costs its users no reference count.
    Single(&'static Arc<Breaker>),
    Keyed(Arc<KeyedBreaker>),
}

struct Entry {
    breakers: Breakers,
    options: BreakerBuilder,
    origin: Origin,
}

static REGISTRY: RwLock<Option<HashMap<Arc<str>, Entry>>> = RwLock::new(None);

/// What differs between `options` (from `origin`) and those `entry` was registered with, in
/// words; a setting not given reads as its default where that is fixed.
fn conflict(name: &str, options: &BreakerBuilder, origin: Origin, entry: &Entry) -> Option<String> {
    let in_force = |options: &BreakerBuilder, setting: &'static str| {
        options.get(setting).or_else(|| match setting {
            "error_threshold" if options.options.failure_rate.is_none() => {
                Some(Value::from(DEFAULT_ERROR_THRESHOLD))
            }
            "min_calls" if options.options.failure_rate.is_some() => {
                Some(Value::from(DEFAULT_MIN_CALLS))
            }
            "success_threshold" | "half_open_calls" => Some(Value::from(1_u32)),
            "backoff" => Some(Value::from(1.0)),
            "idle_timeout" => Some(Value::from(DEFAULT_IDLE_TIMEOUT)),
            "max_keys" => Some(Value::Int(DEFAULT_MAX_KEYS as i64)),
            _ => None,
        })
    };
    let difference = first_difference(options, &entry.options, in_force)?;
    Some(named::conflict(name, difference, origin, entry.origin))
}

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
        .breakers
    {
        Breakers::Single(b) => Some(Arc::clone(b)),
        Breakers::Keyed(_) => None,
    }
}

/// The registered keyed family called `name`.
pub fn get_keyed(name: &str) -> Option<Arc<KeyedBreaker>> {
    match REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(name)?
        .breakers
    {
        Breakers::Keyed(ref k) => Some(k.clone()),
        Breakers::Single(_) => None,
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

/// What registering a name found: the breaker (or family) under it, and what differs between
/// the options given and those it was registered with, in words (`None`: the same, or registered
/// now). `Err` when the name belongs to the other kind (keyed, or single).
pub(crate) type Found<B> = Result<(B, Option<String>), ()>;

/// The single breaker called `name`, registered with `options` (from `origin`) by `create` if
/// absent. `create` runs under the registry's lock (its settings put in force before the breaker
/// is published); the events emitted meanwhile wait for the lock's release ([`crate::later`]).
pub(crate) fn single(
    name: Arc<str>,
    options: &BreakerBuilder,
    origin: Origin,
    create: impl FnOnce() -> Arc<Breaker>,
) -> Found<&'static Arc<Breaker>> {
    crate::later::hold(|| {
        let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
        let map = registry.get_or_insert_with(HashMap::new);
        if let Some(entry) = map.get(&name) {
            return match entry.breakers {
                Breakers::Single(b) => Ok((b, conflict(&name, options, origin, entry))),
                Breakers::Keyed(_) => Err(()),
            };
        }
        let breaker: &'static Arc<Breaker> = Box::leak(Box::new(create()));
        map.insert(
            name,
            Entry {
                breakers: Breakers::Single(breaker),
                options: options.clone(),
                origin,
            },
        );
        Ok((breaker, None))
    })
}

/// The keyed family called `name`, registered with `options` (from `origin`) by `create` if
/// absent.
pub(crate) fn keyed(
    name: Arc<str>,
    options: &BreakerBuilder,
    origin: Origin,
    create: impl FnOnce() -> Arc<KeyedBreaker>,
) -> Found<Arc<KeyedBreaker>> {
    crate::later::hold(|| {
        let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
        let map = registry.get_or_insert_with(HashMap::new);
        if let Some(entry) = map.get(&name) {
            return match &entry.breakers {
                Breakers::Keyed(k) => Ok((k.clone(), conflict(&name, options, origin, entry))),
                Breakers::Single(_) => Err(()),
            };
        }
        let family = create();
        map.insert(
            name,
            Entry {
                breakers: Breakers::Keyed(family.clone()),
                options: options.clone(),
                origin,
            },
        );
        Ok((family, None))
    })
}

/// Holds the registry's read lock: while it is held, nothing can register.
#[cfg(all(test, feature = "tower"))]
pub(crate) fn read_lock() -> impl Drop {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}
