//! Policies registered by name for the life of the process, leaked once per name: the one
//! registry of every policy, whether an attribute's site (at its first call), a builder's
//! `register` or a `tower` layer made the policy (a breaker's entry is a single breaker or a
//! keyed family). Each name keeps the options it was registered with and where they come from,
//! so that a later registration with other options is refused or logged, never silent.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use crate::options::{Options, Value};
use crate::ConfigError;

/// Where a name's options come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A builder's `register`.
    Builder,
    /// A `tower` layer's `new`.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    Layer,
    /// An attribute's site.
    Attribute,
}

/// One setting that two registrations of a name give different values: its name and each
/// value (`None`: not given, its default applies).
pub(crate) type Difference = (&'static str, Option<Value>, Option<Value>);

/// The first setting in which two sets of options differ, if any: the policy's own comparison
/// (in its `registry.rs`).
pub(crate) type Differ<O> = fn(&O, &O) -> Option<Difference>;

struct Entry<T: 'static, O> {
    policy: &'static T,
    options: O,
    origin: Origin,
}

pub(crate) struct Named<T: 'static, O> {
    map: Mutex<Option<HashMap<&'static str, Entry<T, O>>>>,
    differ: Differ<O>,
}

impl<T: Sync, O: Options> Named<T, O> {
    pub(crate) const fn new(differ: Differ<O>) -> Self {
        Named {
            map: Mutex::new(None),
            differ,
        }
    }

    /// Runs `f` with the map locked; the events emitted meanwhile (a site's settings) are held
    /// back until the lock is released ([`crate::later`]), so that a subscriber may look a policy
    /// up or set up another site.
    fn locked<R>(&self, f: impl FnOnce(&mut HashMap<&'static str, Entry<T, O>>) -> R) -> R {
        crate::later::hold(|| {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            f(map.get_or_insert_with(HashMap::new))
        })
    }

    /// The policy registered under `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<&'static T> {
        self.locked(|map| map.get(name).map(|entry| entry.policy))
    }

    /// Every name registered, sorted.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        let mut names = self.locked(|map| map.keys().copied().collect::<Vec<_>>());
        names.sort_unstable();
        names
    }

    /// The policy registered under `name` with the same options, or else the one `make` builds
    /// from `options` (given by a builder or a layer, as `origin` says), registered now. The lock
    /// is held meanwhile, so a second registration of the name waits for `make` (and the settings
    /// it puts in force). A name registered with other options is an error naming the setting
    /// that differs, both values and where each comes from.
    pub(crate) fn register(
        &self,
        name: &'static str,
        options: O,
        origin: Origin,
        make: impl FnOnce(O) -> Result<&'static T, ConfigError>,
    ) -> Result<&'static T, ConfigError> {
        match self.find_or_register(name, options, origin, make)? {
            (_, Some(message)) => Err(ConfigError::new(O::POLICY.name(), name, message)),
            (policy, None) => Ok(policy),
        }
    }

    /// The policy registered under `name`, with what differs between `options` (from `origin`)
    /// and the options it was registered with, in words; or else the one `make` builds from
    /// `options`, registered now (the lock held meanwhile, as for [`register`](Self::register)),
    /// with no difference. The caller says what a difference means (the breaker: an error for a
    /// builder, logged for a layer).
    pub(crate) fn find_or_register(
        &self,
        name: &str,
        options: O,
        origin: Origin,
        make: impl FnOnce(O) -> Result<&'static T, ConfigError>,
    ) -> Result<(&'static T, Option<String>), ConfigError> {
        self.locked(|map| {
            if let Some(entry) = map.get(name) {
                return Ok((entry.policy, self.conflict(name, &options, origin, entry)));
            }
            let policy = make(options.clone())?;
            // Once per name, for the life of the process, as the policy is.
            let name: &'static str = Box::leak(name.into());
            map.insert(
                name,
                Entry {
                    policy,
                    options,
                    origin,
                },
            );
            Ok((policy, None))
        })
    }

    /// Holds the registry's lock: while it is held, nothing can register or look up.
    #[cfg(all(test, feature = "tower"))]
    pub(crate) fn lock_for_tests(&self) -> impl Drop + '_ {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The policy registered under `name`, or the one `make` makes, registered now with the
    /// options of an attribute's site (`options`, as written). A name registered with other
    /// options keeps its policy, and the difference is logged as a settings error (once per
    /// site: its caller keeps the policy).
    pub(crate) fn set_up(
        &self,
        name: &'static str,
        options: O,
        make: impl FnOnce() -> &'static T,
    ) -> &'static T {
        let (policy, conflict) = self.locked(|map| {
            if let Some(entry) = map.get(name) {
                let conflict = self.conflict(name, &options, Origin::Attribute, entry);
                return (entry.policy, conflict);
            }
            let policy = make();
            map.insert(
                name,
                Entry {
                    policy,
                    options,
                    origin: Origin::Attribute,
                },
            );
            (policy, None)
        });
        // Out of the lock: a subscriber may look a policy up.
        if let Some(message) = conflict {
            let error = ConfigError::new(O::POLICY.name(), name, message);
            tracing::error!(
                target: "resiliency::settings",
                %error,
                "options differ from those the name was registered with; the registered policy is used"
            );
        }
        policy
    }

    /// What differs between `options` (from `origin`) and the options `entry` was registered
    /// with, in words: "`total` = 300ms from the layer differs from 1s in the attribute of
    /// `fetch`".
    fn conflict(
        &self,
        name: &str,
        options: &O,
        origin: Origin,
        entry: &Entry<T, O>,
    ) -> Option<String> {
        let difference = (self.differ)(options, &entry.options)?;
        Some(conflict(name, difference, origin, entry.origin))
    }
}

/// A difference between two registrations of `name`, in words: "`total` = 300ms from the layer
/// differs from 1s in the attribute of `fetch`".
pub(crate) fn conflict(
    name: &str,
    (setting, new, old): Difference,
    origin: Origin,
    registered: Origin,
) -> String {
    let value = |value: Option<Value>| match value {
        Some(value) => value.to_string(),
        None => "the default".to_owned(),
    };
    format!(
        "`{setting}` = {} {} differs from {} {}",
        value(new),
        Where(origin, name),
        value(old),
        Where(registered, name),
    )
}

/// Where options come from, in words.
struct Where<'a>(Origin, &'a str);

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Origin::Builder => f.write_str("from `register`"),
            Origin::Layer => f.write_str("from the layer"),
            Origin::Attribute => write!(f, "in the attribute of `{}`", self.1),
        }
    }
}

/// The first of `settings` for which `a` and `b` give different values, each value read with
/// `in_force` (the value given, or the default that then applies).
pub(crate) fn first_difference<O: Options>(
    a: &O,
    b: &O,
    in_force: impl Fn(&O, &'static str) -> Option<Value>,
) -> Option<Difference> {
    O::POLICY.settings().iter().find_map(|&setting| {
        let (x, y) = (in_force(a, setting), in_force(b, setting));
        (x != y).then_some((setting, x, y))
    })
}
