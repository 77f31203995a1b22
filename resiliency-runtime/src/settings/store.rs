//! The overrides in force and the live sites they apply to.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::blame::{blame, checked};
use super::env_store::{env_layer, read_env_once, warn_unmatched_env};
use super::site::{Given, Live, Site};
use crate::options::{Options, Target};

use super::{env, InForce, Overrides, Policy, SettingError, SettingsError, Source, Value, ALL};

/// The overrides of one layer: `(policy, site or "*", setting) -> (value, source)`. The
/// environment's layer holds site names as its variables write them.
#[derive(Clone, Default)]
pub(super) struct Layer {
    pub(super) entries: BTreeMap<(Policy, String, &'static str), (Value, Source)>,
}

pub(super) const FILE: usize = 0;
pub(super) const ENV: usize = 1;
pub(super) const CODE: usize = 2;

pub(super) struct Store {
    /// File, environment, code: the later wins.
    pub(super) layers: [Layer; 3],
    pub(super) env_read: bool,
    pub(super) sites: Vec<Attached>,
    /// The live sites by policy and name, and by name as variables spell it: indexes in `sites`.
    pub(super) by_name: BTreeMap<(Policy, String), Vec<usize>>,
    pub(super) by_spelling: BTreeMap<(Policy, String), Vec<usize>>,
    /// The variables already warned about as a letter or two off a live site's name, and those
    /// already noted (at debug) as naming no site set up so far.
    pub(super) warned: BTreeSet<String>,
    pub(super) noted: BTreeSet<String>,
}

/// A live site, the overrides in force there, and the ones it was set up without because they
/// broke a rule there: each of those stays out while the layers give that same value from that
/// same source.
pub(super) struct Attached {
    pub(super) site: Arc<dyn Site>,
    pub(super) applied: Vec<Given>,
    pub(super) left_out: Vec<Given>,
}

impl Attached {
    /// The overrides that reach this site through `layers`.
    fn overrides(&self, layers: &[Layer; 3]) -> Vec<Given> {
        let mut overrides = overrides_for(layers, self.site.policy(), self.site.name());
        overrides.retain(|o| !self.left_out.iter().any(|l| same(l, o)));
        overrides
    }
}

/// The same override: setting, value (floats by their bits) and source.
pub(super) fn same(a: &Given, b: &Given) -> bool {
    a.0 == b.0 && a.1.same(&b.1) && a.2 == b.2
}

static STORE: Mutex<Store> = Mutex::new(Store::EMPTY);

impl Store {
    /// No layer, no site, the environment not read yet.
    const EMPTY: Store = Store {
        layers: [const {
            Layer {
                entries: BTreeMap::new(),
            }
        }; 3],
        env_read: false,
        sites: Vec::new(),
        by_name: BTreeMap::new(),
        by_spelling: BTreeMap::new(),
        warned: BTreeSet::new(),
        noted: BTreeSet::new(),
    };
}

/// Runs `f` with the store locked. The events it emits ([`crate::later::emit`]) wait until the
/// lock is released (and any registry's lock a site's set-up holds): a subscriber may reach the
/// store (a site's first call) while it handles them.
pub(super) fn locked<R>(f: impl FnOnce(&mut Store) -> R) -> R {
    crate::later::hold(|| {
        let mut store = STORE.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut store)
    })
}

impl Store {
    /// The live sites an override of `site` in `layer` reaches.
    fn reached(&self, layer: usize, policy: Policy, site: &str) -> Vec<usize> {
        if site == ALL {
            return (0..self.sites.len())
                .filter(|&i| self.sites[i].site.policy() == policy)
                .collect();
        }
        let index = if layer == ENV {
            &self.by_spelling
        } else {
            &self.by_name
        };
        index
            .get(&(policy, site.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// Whether an override of `site` in `layer` reaches a live site.
    pub(super) fn taken(&self, layer: usize, policy: Policy, site: &str) -> bool {
        let index = if layer == ENV {
            &self.by_spelling
        } else {
            &self.by_name
        };
        index.contains_key(&(policy, site.to_owned()))
    }

    /// The name of the live `policy` site that variables spell `spelled` (or of `also`, a site
    /// being set up).
    pub(super) fn named(
        &self,
        policy: Policy,
        spelled: &str,
        also: Option<&dyn Site>,
    ) -> Option<String> {
        if let Some(site) = also.filter(|s| s.policy() == policy && env::spell(s.name()) == spelled)
        {
            return Some(site.name().to_owned());
        }
        let i = *self
            .by_spelling
            .get(&(policy, spelled.to_owned()))?
            .first()?;
        Some(self.sites[i].site.name().to_owned())
    }
}

/// The overrides that reach `site` through `layers`: per setting, the latest layer's, and in a
/// layer the site's own before the one for every site.
pub(super) fn overrides_for(layers: &[Layer; 3], policy: Policy, site: &str) -> Vec<Given> {
    let spelled = env::spell(site);
    let mut out = Vec::new();
    for &setting in policy.settings() {
        let found = [CODE, ENV, FILE].into_iter().find_map(|layer| {
            let own = if layer == ENV { spelled.as_str() } else { site };
            let entries = &layers[layer].entries;
            entries
                .get(&(policy, own.to_owned(), setting))
                .or_else(|| entries.get(&(policy, ALL.to_owned(), setting)))
        });
        if let Some((value, source)) = found {
            out.push((setting, value.clone(), source.clone()));
        }
    }
    out
}

pub(super) fn refs(overrides: &[Given]) -> Vec<(&'static str, &Value)> {
    overrides.iter().map(|(s, v, _)| (*s, v)).collect()
}

pub(super) fn same_all(a: &[Given], b: &[Given]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
}

/// Puts the store's layers, changed already, in force at the live sites `reached` whose
/// overrides they change, after checking every one of them. Refused, with nothing applied, when
/// a rule breaks at one of them: the caller puts the layers back.
fn commit(store: &mut Store, reached: &[usize]) -> Result<(), SettingsError> {
    let mut errors = Vec::new();
    let mut changed = Vec::new();
    for &i in reached {
        let attached = &store.sites[i];
        let overrides = attached.overrides(&store.layers);
        if same_all(&overrides, &attached.applied) {
            continue;
        }
        match attached.site.configure(&refs(&overrides), false) {
            Ok(()) => changed.push((i, overrides)),
            Err(faults) => errors.extend(
                faults
                    .into_iter()
                    .map(|fault| blame(attached, &overrides, fault)),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(SettingsError::new(errors));
    }
    let sites = changed.len();
    for (i, overrides) in changed {
        let attached = &mut store.sites[i];
        if let Err(faults) = attached.site.configure(&refs(&overrides), true) {
            // Checked above, under the same lock: cannot happen.
            let (policy, name) = (
                attached.site.policy().name(),
                attached.site.name().to_owned(),
            );
            crate::later::emit(
                move || tracing::error!(target: "resiliency::settings", policy, name, ?faults, "a checked change failed"),
            );
        }
        attached.applied = overrides;
    }
    if sites > 0 {
        crate::later::emit(
            move || tracing::info!(target: "resiliency::settings", sites, "settings changed"),
        );
    } else {
        crate::later::emit(
            || tracing::debug!(target: "resiliency::settings", "settings changed at no live site"),
        );
    }
    Ok(())
}

/// Puts `old` back as the `layer` entry `key` after a refused change.
fn put_back(
    store: &mut Store,
    layer: usize,
    key: (Policy, String, &'static str),
    old: Option<(Value, Source)>,
) {
    let entries = &mut store.layers[layer].entries;
    match old {
        Some(old) => {
            entries.insert(key, old);
        }
        None => {
            entries.remove(&key);
        }
    }
}

/// Overrides `setting` of the `policy` site `site` (or of every site: [`ALL`]) from code, above
/// the file and the environment. Applies at once to the live sites it reaches, and to sites set
/// up later. Refused, with nothing changed, when the value is not one the setting takes or breaks
/// a rule at a live site.
pub fn set(
    policy: Policy,
    site: &str,
    setting: &str,
    value: impl Into<Value>,
) -> Result<(), SettingsError> {
    let value = value.into();
    locked(|store| {
        read_env_once(store, None);
        let name = checked(policy, site, setting, Some(&value), &Source::Code)
            .map_err(|e| SettingsError::new(vec![e]))?;
        let key = (policy, site.to_owned(), name);
        let old = store.layers[CODE]
            .entries
            .insert(key.clone(), (value, Source::Code));
        let reached = store.reached(CODE, policy, site);
        commit(store, &reached).inspect_err(|_| put_back(store, CODE, key, old))
    })
}

/// Removes the code's override of `setting` for `site` (or [`ALL`]): the file's, the
/// environment's or the attribute's value applies again. Refused, with nothing changed, should
/// the value that applies then break a rule at a live site.
pub fn unset(policy: Policy, site: &str, setting: &str) -> Result<(), SettingsError> {
    locked(|store| {
        let name = checked(policy, site, setting, None, &Source::Code)
            .map_err(|e| SettingsError::new(vec![e]))?;
        let key = (policy, site.to_owned(), name);
        let Some(old) = store.layers[CODE].entries.remove(&key) else {
            return Ok(());
        };
        let reached = store.reached(CODE, policy, site);
        commit(store, &reached).inspect_err(|_| put_back(store, CODE, key, Some(old)))
    })
}

/// Makes `layer` the store's layer `index` and puts it in force at every live site it changes;
/// refused, the previous layer stays.
fn replace_layer(store: &mut Store, index: usize, layer: Layer) -> Result<(), SettingsError> {
    let old = std::mem::replace(&mut store.layers[index], layer);
    let reached: Vec<usize> = (0..store.sites.len()).collect();
    commit(store, &reached).inspect_err(|_| store.layers[index] = old)
}

/// Makes `overrides` the file layer, in place of the previous one; `path` names the file in
/// messages and in [`effective`]. Refused whole, with the previous file's values kept, when a
/// value is not one its setting takes or breaks a rule at a live site.
pub fn load(path: &str, overrides: &Overrides) -> Result<(), SettingsError> {
    let path: Arc<str> = Arc::from(path);
    let mut layer = Layer::default();
    let mut errors = Vec::new();
    for entry in overrides.entries() {
        let source = Source::File {
            path: path.clone(),
            line: entry.line,
        };
        match checked(
            entry.policy,
            &entry.site,
            &entry.setting,
            Some(&entry.value),
            &source,
        ) {
            Ok(name) => {
                layer.entries.insert(
                    (entry.policy, entry.site.clone(), name),
                    (entry.value.clone(), source),
                );
            }
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(SettingsError::new(errors));
    }
    locked(|store| {
        read_env_once(store, None);
        replace_layer(store, FILE, layer)?;
        // A site one or two letters off a live site's name: most likely misspelt.
        warn_unmatched_env(store, None);
        Ok(())
    })
}

/// Reads the environment's `RESILIENCY_<POLICY>__...` variables again (they are read once, when
/// the first site is set up), in place of the values read before. Refused whole, with the
/// previous values kept, when a variable names no setting, holds a value its setting does not
/// take, or breaks a rule at a live site; a refused environment can be read again, and if no site
/// has read it yet, the first site set up reads it (leaving out the bad variables, logged).
/// Variables for a named site that no live site takes are warned about (`tracing`, level warn,
/// target `resiliency::settings`), once each.
pub fn load_env() -> Result<(), SettingsError> {
    locked(|store| {
        let (layer, errors) = env_layer(store, std::env::vars_os(), None);
        if !errors.is_empty() {
            return Err(SettingsError::new(errors));
        }
        replace_layer(store, ENV, layer)?;
        store.env_read = true;
        warn_unmatched_env(store, None);
        Ok(())
    })
}

/// Every setting of the live `policy` site `site`: the value in force and where it comes from,
/// one [`Effective`](super::Effective) per setting of [`Policy::settings`]. A value another setting gives (a
/// breaker's `error_timeout` from its `capacity`) is reported with [`Source::Derived`]; the
/// value is `None` where the built-in default applies. `None` when no such site has been set up:
/// an attribute's site is set up by its first call.
pub fn effective(policy: Policy, site: &str) -> Option<InForce> {
    locked(|store| {
        let i = *store.by_name.get(&(policy, site.to_owned()))?.first()?;
        let attached = &store.sites[i];
        Some(InForce(attached.site.in_force(&attached.applied)))
    })
}

/// The overrides for a named site that no live site has taken: the policy, the site as written,
/// the setting and its source. A site is set up by its first call, so before then its overrides
/// are listed here too; after a warm-up, what is left is most likely a misspelt name.
pub fn unmatched() -> Vec<(Policy, String, &'static str, Source)> {
    locked(|store| {
        let mut out = Vec::new();
        for (layer, overrides) in store.layers.iter().enumerate() {
            for ((policy, site, setting), (_, source)) in &overrides.entries {
                if site != ALL && !store.taken(layer, *policy, site) {
                    out.push((*policy, site.clone(), *setting, source.clone()));
                }
            }
        }
        out
    })
}

/// The live sites: each policy and name, in the order they were set up.
pub fn sites() -> Vec<(Policy, String)> {
    locked(|store| {
        store
            .sites
            .iter()
            .map(|s| (s.site.policy(), s.site.name().to_owned()))
            .collect()
    })
}

/// Sets up a live site: the overrides that reach it are put in force on `target` (which holds
/// the attribute's `options` already), and later changes reach it. An override that breaks a rule
/// here is logged and left out, the attribute's value standing in.
pub(crate) fn attach<O: Options, T: Target<O>>(attribute: O, target: T) {
    let site: Arc<dyn Site> = Arc::new(Live { attribute, target });
    locked(|store| {
        read_env_once(store, Some(&*site));
        // A variable one or two letters off this site's name: most likely misspelt.
        warn_unmatched_env(store, Some(&*site));
        let mut overrides = overrides_for(&store.layers, site.policy(), site.name());
        let mut left_out = Vec::new();
        let mut leave_out = |entry: Given, message: String| {
            let error = SettingError::new(
                site.policy(),
                site.name(),
                entry.0,
                entry.2.clone(),
                message,
            );
            crate::later::emit(
                move || tracing::error!(target: "resiliency::settings", %error, "an override is left out"),
            );
            left_out.push(entry);
        };
        // `target` holds the attribute's options, checked where they were given (`usable`, a
        // builder): with no override there is nothing to check or apply. An override left out
        // was never applied.
        while !overrides.is_empty() {
            let Err(faults) = site.configure(&refs(&overrides), true) else {
                break;
            };
            let before = overrides.len();
            for fault in faults {
                // The override of the setting at fault, or else of one the rule involves.
                let at = |s: &str| overrides.iter().position(|(o, _, _)| *o == s);
                let found = at(fault.setting).or_else(|| fault.involves.iter().find_map(|s| at(s)));
                if let Some(i) = found {
                    let entry = overrides.remove(i);
                    let message = if entry.0 == fault.setting {
                        fault.message
                    } else {
                        format!(
                            "`{}` breaks a rule with it: {}",
                            fault.setting, fault.message
                        )
                    };
                    leave_out(entry, message);
                }
            }
            if overrides.len() == before {
                // The fault lies with settings no override gives: leave every override out.
                for entry in overrides.drain(..) {
                    let message = "left out with the other overrides of this site, which together break a rule";
                    leave_out(entry, message.to_owned());
                }
            }
        }
        let i = store.sites.len();
        let key = (site.policy(), site.name().to_owned());
        store
            .by_spelling
            .entry((key.0, env::spell(&key.1)))
            .or_default()
            .push(i);
        store.by_name.entry(key).or_default().push(i);
        store.sites.push(Attached {
            site,
            applied: overrides,
            left_out,
        });
    });
}

/// One override of a layer, as tests read it: policy, site, setting, value, source.
#[cfg(test)]
pub(crate) type Found = (Policy, String, &'static str, Value, Source);

#[cfg(test)]
pub(crate) fn env_layer_for_tests(vars: Vec<(&str, &str)>) -> (Vec<Found>, Vec<SettingError>) {
    let store = Store::EMPTY;
    let (layer, errors) = env_layer(
        &store,
        vars.into_iter().map(|(k, v)| (k.into(), v.into())),
        None,
    );
    (
        layer
            .entries
            .into_iter()
            .map(|((p, s, n), (v, src))| (p, s, n, v, src))
            .collect(),
        errors,
    )
}
