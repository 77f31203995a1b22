//! The overrides in force and the live sites they apply to.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use resilient_rules::Violation;

use super::{env, Effective, Overrides, Policy, SettingError, SettingsError, Source, Value, ALL};

/// A policy's options as its builder holds them, read and written setting by setting.
pub(crate) trait Options: Clone + Send + Sync + 'static {
    /// The policy.
    const POLICY: Policy;
    /// Pairs of settings that exclude each other: overriding one drops the attribute's other.
    const EXCLUSIVE: &'static [(&'static str, &'static str)] = &[];

    /// The site's name.
    fn site(&self) -> &str;
    /// The value given for `setting`, if any.
    fn get(&self, setting: &'static str) -> Option<Value>;
    /// Gives `setting` a value; `Err` says why the value is not one for it.
    fn set(&mut self, setting: &'static str, value: &Value) -> Result<(), String>;
    /// Leaves `setting` out (its default applies).
    fn unset(&mut self, setting: &'static str);
    /// Every rule the options break.
    fn violations(&self) -> Vec<Violation>;
}

/// What a site's options are put in force on: a breaker, a keyed family, a guard, a race.
pub(crate) trait Target<O>: Send + Sync + 'static {
    /// Puts `options`, which break no rule, in force.
    fn apply(&self, options: &O);
}

/// A live site, as the store sees it.
pub(crate) trait Site: Send + Sync + 'static {
    fn policy(&self) -> Policy;
    fn name(&self) -> &str;
    /// The attribute's value for `setting`.
    fn attribute(&self, setting: &'static str) -> Option<Value>;
    /// Checks the attribute's options with `overrides` on top; with `apply`, puts them in force.
    /// `Err` lists each setting at fault and why.
    fn configure(
        &self,
        overrides: &[(&'static str, &Value)],
        apply: bool,
    ) -> Result<(), Vec<(&'static str, String)>>;
}

/// A site: the options its attribute gave, and what they are put in force on.
pub(crate) struct Live<O, T> {
    attribute: O,
    target: T,
}

impl<O: Options, T: Target<O>> Site for Live<O, T> {
    fn policy(&self) -> Policy {
        O::POLICY
    }

    fn name(&self) -> &str {
        self.attribute.site()
    }

    fn attribute(&self, setting: &'static str) -> Option<Value> {
        self.attribute.get(setting)
    }

    fn configure(
        &self,
        overrides: &[(&'static str, &Value)],
        apply: bool,
    ) -> Result<(), Vec<(&'static str, String)>> {
        let mut options = self.attribute.clone();
        let overridden = |setting: &str| overrides.iter().any(|(s, _)| *s == setting);
        for &(a, b) in O::EXCLUSIVE {
            if overridden(a) && !overridden(b) {
                options.unset(b);
            } else if overridden(b) && !overridden(a) {
                options.unset(a);
            }
        }
        let mut errors = Vec::new();
        for (setting, value) in overrides {
            if let Err(why) = options.set(setting, value) {
                errors.push((*setting, why));
            }
        }
        if errors.is_empty() {
            errors.extend(
                options
                    .violations()
                    .into_iter()
                    .map(|v| (v.argument(), v.message().to_owned())),
            );
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        if apply {
            self.target.apply(&options);
        }
        Ok(())
    }
}

/// Options that break a rule (a `const` out of range in an attribute) lose each setting at fault,
/// one rule at a time, each reported as an error: the defaults stand in for them. `None` when
/// that does not help (a required setting at fault).
pub(crate) fn usable<O: Options>(mut options: O) -> Option<O> {
    for _ in 0..=O::POLICY.settings().len() {
        let violations = options.violations();
        let Some(first) = violations.first() else {
            return Some(options);
        };
        let error = crate::ConfigError::from_violations(
            O::POLICY.name(),
            options.site(),
            violations.clone(),
        )
        .expect_err("there are violations");
        tracing::error!(
            target: "resilient::settings",
            %error,
            setting = first.argument(),
            "a setting of the attribute breaks a rule; its default applies"
        );
        // A setting the attribute does not give (a required one) cannot be left to its default.
        options.get(first.argument())?;
        options.unset(first.argument());
    }
    None
}

/// The overrides of one layer: `(policy, site or "*", setting) -> (value, source)`. The
/// environment's layer holds site names as its variables write them.
#[derive(Clone, Default)]
struct Layer {
    entries: BTreeMap<(Policy, String, &'static str), (Value, Source)>,
}

const FILE: usize = 0;
const ENV: usize = 1;
const CODE: usize = 2;

struct Store {
    /// File, environment, code: the later wins.
    layers: [Layer; 3],
    env_read: bool,
    sites: Vec<Attached>,
}

/// A live site, and the overrides it was set up without because they broke a rule there: each
/// stays out while the layers give that same value from that same source.
struct Attached {
    site: Arc<dyn Site>,
    left_out: Vec<(&'static str, Value, Source)>,
}

impl Attached {
    /// The overrides that reach this site through `layers`.
    fn overrides(&self, layers: &[Layer; 3]) -> Vec<(&'static str, Value, Source)> {
        let mut overrides = overrides_for(layers, self.site.policy(), self.site.name());
        overrides.retain(|o| !self.left_out.contains(o));
        overrides
    }
}

static STORE: Mutex<Store> = Mutex::new(Store {
    layers: [
        Layer {
            entries: BTreeMap::new(),
        },
        Layer {
            entries: BTreeMap::new(),
        },
        Layer {
            entries: BTreeMap::new(),
        },
    ],
    env_read: false,
    sites: Vec::new(),
});

fn store() -> MutexGuard<'static, Store> {
    STORE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The overrides that reach `site` through `layers`: per setting, the latest layer's, and in a
/// layer the site's own before the one for every site.
fn overrides_for(
    layers: &[Layer; 3],
    policy: Policy,
    site: &str,
) -> Vec<(&'static str, Value, Source)> {
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

fn refs<'a>(overrides: &'a [(&'static str, Value, Source)]) -> Vec<(&'static str, &'a Value)> {
    overrides.iter().map(|(s, v, _)| (*s, v)).collect()
}

/// Checks `layers` against every live site; with no error, makes them the store's and applies
/// them.
fn commit(store: &mut Store, layers: [Layer; 3]) -> Result<(), SettingsError> {
    let mut errors = Vec::new();
    for attached in &store.sites {
        let site = &attached.site;
        let overrides = attached.overrides(&layers);
        if let Err(faults) = site.configure(&refs(&overrides), false) {
            for (setting, message) in faults {
                let source = overrides
                    .iter()
                    .find(|(s, _, _)| *s == setting)
                    .map(|(_, _, source)| source.clone())
                    .unwrap_or_else(|| match site.attribute(setting) {
                        Some(_) => Source::Attribute,
                        None => Source::Default,
                    });
                errors.push(SettingError::new(
                    site.policy(),
                    site.name(),
                    setting,
                    source,
                    message,
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(SettingsError::new(errors));
    }
    store.layers = layers;
    tracing::info!(target: "resilient::settings", sites = store.sites.len(), "settings changed");
    for attached in &store.sites {
        let site = &attached.site;
        let overrides = attached.overrides(&store.layers);
        if let Err(faults) = site.configure(&refs(&overrides), true) {
            // Checked above, under the same lock: cannot happen.
            tracing::error!(target: "resilient::settings", site = site.name(), ?faults, "a checked change failed");
        }
    }
    Ok(())
}

/// The checked name of `setting` for `policy`, and that `value` is one it takes.
fn checked(
    policy: Policy,
    site: &str,
    setting: &str,
    value: Option<&Value>,
    source: &Source,
) -> Result<&'static str, SettingError> {
    let Some(name) = policy.setting(setting) else {
        let mut message = format!("`{setting}` is not a {policy} setting");
        if let Some(near) = nearest(setting, policy.settings()) {
            message += &format!("; did you mean `{near}`?");
        }
        message += &format!(" The settings are: {}", policy.settings().join(", "));
        return Err(SettingError::new(
            policy,
            site,
            setting,
            source.clone(),
            message,
        ));
    };
    if let Some(value) = value {
        let probe = |why: String| SettingError::new(policy, site, setting, source.clone(), why);
        match policy {
            Policy::Breaker => crate::breaker::check_value(name, value).map_err(probe)?,
            Policy::RaceRetry => crate::race::check_value(name, value).map_err(probe)?,
            Policy::TooBusy => crate::busy::check_value(name, value).map_err(probe)?,
        }
    }
    Ok(name)
}

/// The name among `names` one or two edits away from `given`, if one is.
fn nearest(given: &str, names: &[&'static str]) -> Option<&'static str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    names
        .iter()
        .copied()
        .map(|n| (distance(given, n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

fn read_env_once(store: &mut Store) {
    if store.env_read {
        return;
    }
    store.env_read = true;
    let (layer, errors) = env_layer(std::env::vars_os());
    for error in &errors {
        tracing::error!(target: "resilient::settings", %error, "an environment variable is ignored");
    }
    store.layers[ENV] = layer;
}

fn env_layer(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> (Layer, Vec<SettingError>) {
    let mut layer = Layer::default();
    let mut errors = Vec::new();
    for found in env::read(vars) {
        let (policy, site, setting, value, source) = match found {
            Ok(entry) => entry,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        match checked(policy, &site, &setting, Some(&value), &source) {
            Ok(name) => {
                layer.entries.insert((policy, site, name), (value, source));
            }
            Err(error) => errors.push(error),
        }
    }
    (layer, errors)
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
    let mut store = store();
    read_env_once(&mut store);
    let name = checked(policy, site, setting, Some(&value), &Source::Code)
        .map_err(|e| SettingsError::new(vec![e]))?;
    let mut layers = store.layers.clone();
    layers[CODE]
        .entries
        .insert((policy, site.to_owned(), name), (value, Source::Code));
    commit(&mut store, layers)
}

/// Removes the code's override of `setting` for `site` (or [`ALL`]): the file's, the
/// environment's or the attribute's value applies again. Refused, with nothing changed, should
/// the value that applies then break a rule at a live site.
pub fn unset(policy: Policy, site: &str, setting: &str) -> Result<(), SettingsError> {
    let mut store = store();
    let name = checked(policy, site, setting, None, &Source::Code)
        .map_err(|e| SettingsError::new(vec![e]))?;
    let mut layers = store.layers.clone();
    layers[CODE]
        .entries
        .remove(&(policy, site.to_owned(), name));
    commit(&mut store, layers)
}

/// Makes `overrides` the file layer, in place of the previous one; `path` names the file in
/// messages and in [`effective`]. Refused whole, with the previous file's values kept, when a
/// value is not one its setting takes or breaks a rule at a live site.
pub fn load(path: &str, overrides: &Overrides) -> Result<(), SettingsError> {
    let path: Arc<str> = Arc::from(path);
    let mut store = store();
    read_env_once(&mut store);
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
    let mut layers = store.layers.clone();
    layers[FILE] = layer;
    commit(&mut store, layers)
}

/// Reads the environment's `RESILIENT_<POLICY>__...` variables again (they are read once, when
/// the first site is set up), in place of the values read before. Refused whole, with the
/// previous values kept, when a variable names no setting, holds a value its setting does not
/// take, or breaks a rule at a live site.
pub fn load_env() -> Result<(), SettingsError> {
    let mut store = store();
    store.env_read = true;
    let (layer, errors) = env_layer(std::env::vars_os());
    if !errors.is_empty() {
        return Err(SettingsError::new(errors));
    }
    let mut layers = store.layers.clone();
    layers[ENV] = layer;
    commit(&mut store, layers)
}

/// Every setting of the live `policy` site `site`: the value in force (`None` for the built-in
/// default) and where it comes from. `None` when no such site has been set up: a `#[breaker]`,
/// `#[too_busy]` or `#[race_retry]` site is set up by its first call.
pub fn effective(policy: Policy, site: &str) -> Option<Vec<Effective>> {
    let store = store();
    let attached = store
        .sites
        .iter()
        .find(|s| s.site.policy() == policy && s.site.name() == site)?;
    let live = &attached.site;
    let overrides = attached.overrides(&store.layers);
    Some(
        policy
            .settings()
            .iter()
            .map(
                |&setting| match overrides.iter().find(|(s, _, _)| *s == setting) {
                    Some((_, value, source)) => Effective {
                        setting,
                        value: Some(value.clone()),
                        source: source.clone(),
                    },
                    None => match live.attribute(setting) {
                        Some(value) => Effective {
                            setting,
                            value: Some(value),
                            source: Source::Attribute,
                        },
                        None => Effective {
                            setting,
                            value: None,
                            source: Source::Default,
                        },
                    },
                },
            )
            .collect(),
    )
}

/// The overrides for a named site that no live site has taken: the policy, the site as written,
/// the setting and its source. A site is set up by its first call, so before then its overrides
/// are listed here too; after a warm-up, what is left is most likely a misspelt name.
pub fn unmatched() -> Vec<(Policy, String, &'static str, Source)> {
    let store = store();
    let mut out = Vec::new();
    for (layer, overrides) in store.layers.iter().enumerate() {
        for ((policy, site, setting), (_, source)) in &overrides.entries {
            if site == ALL {
                continue;
            }
            let taken = store.sites.iter().any(|s| {
                s.site.policy() == *policy
                    && if layer == ENV {
                        env::spell(s.site.name()) == *site
                    } else {
                        s.site.name() == site
                    }
            });
            if !taken {
                out.push((*policy, site.clone(), *setting, source.clone()));
            }
        }
    }
    out
}

/// The live sites: each policy and name, in the order they were set up.
pub fn sites() -> Vec<(Policy, String)> {
    store()
        .sites
        .iter()
        .map(|s| (s.site.policy(), s.site.name().to_owned()))
        .collect()
}

/// Sets up a live site: the overrides that reach it are put in force on `target` (which holds
/// the attribute's `options` already), and later changes reach it. An override that breaks a rule
/// here is logged and left out, the attribute's value standing in.
pub(crate) fn attach<O: Options, T: Target<O>>(attribute: O, target: T) {
    let site: Arc<dyn Site> = Arc::new(Live { attribute, target });
    let mut store = store();
    read_env_once(&mut store);
    let mut overrides = overrides_for(&store.layers, site.policy(), site.name());
    let mut left_out = Vec::new();
    while let Err(faults) = site.configure(&refs(&overrides), true) {
        if overrides.is_empty() {
            // The attribute's options were checked by `usable`: cannot happen.
            tracing::error!(target: "resilient::settings", site = site.name(), ?faults, "a site's own options failed");
            break;
        }
        let before = overrides.len();
        for (setting, message) in faults {
            if let Some(i) = overrides.iter().position(|(s, _, _)| *s == setting) {
                let entry = overrides.remove(i);
                let error = SettingError::new(
                    site.policy(),
                    site.name(),
                    setting,
                    entry.2.clone(),
                    message,
                );
                tracing::error!(target: "resilient::settings", %error, "an override is left out");
                left_out.push(entry);
            }
        }
        if overrides.len() == before {
            // The fault lies with settings no override gives: leave every override out.
            for entry in overrides.drain(..) {
                let error = SettingError::new(
                    site.policy(),
                    site.name(),
                    entry.0,
                    entry.2.clone(),
                    "left out with the other overrides of this site, which together break a rule",
                );
                tracing::error!(target: "resilient::settings", %error, "an override is left out");
                left_out.push(entry);
            }
        }
    }
    store.sites.push(Attached { site, left_out });
}

/// One override of a layer, as tests read it: policy, site, setting, value, source.
#[cfg(test)]
pub(crate) type Found = (Policy, String, &'static str, Value, Source);

#[cfg(test)]
pub(crate) fn env_layer_for_tests(vars: Vec<(&str, &str)>) -> (Vec<Found>, Vec<SettingError>) {
    let (layer, errors) = env_layer(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
    (
        layer
            .entries
            .into_iter()
            .map(|((p, s, n), (v, src))| (p, s, n, v, src))
            .collect(),
        errors,
    )
}
