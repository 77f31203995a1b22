//! Breakers by name, in the one registry of named policies ([`crate::named`]): the one place
//! where `#[breaker]` sites, builders and `tower` layers meet. A name holds a single breaker or
//! a keyed family. Each name keeps the options it was registered with and where they come from,
//! so that a later registration with other options is refused (a builder) or logged (an
//! attribute's site, a layer), never silent.

use std::sync::Arc;

use super::breaker::Breaker;
use super::builder::BreakerBuilder;
use super::keyed::KeyedBreaker;
use crate::named::{first_difference, Difference, Named, Origin};
use crate::options::ByName as _;

/// What a name holds: leaked once per name, so that a registered breaker is never dropped and a
/// `'static` reference to it costs its users no reference count.
pub(crate) enum Breakers {
    Single(Arc<Breaker>),
    Keyed(Arc<KeyedBreaker>),
}

static REGISTRY: Named<Breakers, BreakerBuilder> = Named::new(differ);

/// The first setting in which two sets of options differ, a setting not given read as its
/// default where that is fixed.
fn differ(a: &BreakerBuilder, b: &BreakerBuilder) -> Option<Difference> {
    let in_force = |builder: &BreakerBuilder| BreakerBuilder {
        options: builder.options.or_defaults(),
        ..builder.clone()
    };
    first_difference(&in_force(a), &in_force(b), |options, setting| {
        options.get(setting)
    })
}

/// The registered single breaker called `name` (from `#[breaker]` or
/// [`BreakerBuilder::register`](super::BreakerBuilder::register)).
///
/// A `#[breaker]` function registers its breaker on its first call, so this is `None` before
/// then. To hold the handle earlier, register the breaker from code with the same name and
/// options; the attribute then uses that one.
pub fn get(name: &str) -> Option<Arc<Breaker>> {
    match REGISTRY.get(name)? {
        Breakers::Single(breaker) => Some(Arc::clone(breaker)),
        Breakers::Keyed(_) => None,
    }
}

/// The registered keyed family called `name`.
pub fn get_keyed(name: &str) -> Option<Arc<KeyedBreaker>> {
    match REGISTRY.get(name)? {
        Breakers::Keyed(family) => Some(Arc::clone(family)),
        Breakers::Single(_) => None,
    }
}

/// The names of every registered breaker and keyed family, sorted.
pub fn names() -> Vec<String> {
    REGISTRY.names().into_iter().map(str::to_owned).collect()
}

/// What registering a name found: the breaker (or family) under it, and what differs between
/// the options given and those it was registered with, in words (`None`: the same, or registered
/// now). `Err` when the name belongs to the other kind (keyed, or single).
pub(crate) type Found<B> = Result<(B, Option<String>), ()>;

/// The single breaker called `name`, registered with `options` (from `origin`) by `create` if
/// absent. `create` runs under the registry's lock (its settings put in force before the breaker
/// is published); the events emitted meanwhile wait for the lock's release ([`crate::later`]).
pub(crate) fn single(
    name: &str,
    options: &BreakerBuilder,
    origin: Origin,
    create: impl FnOnce() -> Arc<Breaker>,
) -> Found<&'static Arc<Breaker>> {
    match find(name, options, origin, || Breakers::Single(create())) {
        (Breakers::Single(breaker), conflict) => Ok((breaker, conflict)),
        (Breakers::Keyed(_), _) => Err(()),
    }
}

/// The keyed family called `name`, registered with `options` (from `origin`) by `create` if
/// absent, as [`single`] does.
pub(crate) fn keyed(
    name: &str,
    options: &BreakerBuilder,
    origin: Origin,
    create: impl FnOnce() -> Arc<KeyedBreaker>,
) -> Found<Arc<KeyedBreaker>> {
    match find(name, options, origin, || Breakers::Keyed(create())) {
        (Breakers::Keyed(family), conflict) => Ok((Arc::clone(family), conflict)),
        (Breakers::Single(_), _) => Err(()),
    }
}

/// The entry of `name`, made by `create` if absent, with what differs from its options.
fn find(
    name: &str,
    options: &BreakerBuilder,
    origin: Origin,
    create: impl FnOnce() -> Breakers,
) -> (&'static Breakers, Option<String>) {
    let made = |_: BreakerBuilder| Ok(&*Box::leak(Box::new(create())));
    match REGISTRY.find_or_register(name, options.clone(), origin, made) {
        Ok(found) => found,
        Err(never) => unreachable!("making an entry cannot fail: {never}"),
    }
}

/// Holds the registry's lock: while it is held, nothing can register.
#[cfg(all(test, feature = "tower"))]
pub(crate) fn read_lock() -> impl Drop {
    REGISTRY.lock_for_tests()
}
