//! The overrides in force and the live sites they apply to.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use resiliency_rules::Violation;

use super::{
    env, Effective, InForce, Overrides, Policy, SettingError, SettingsError, Source, Value, ALL,
};

/// A policy's options as its builder holds them, read and written setting by setting.
pub(crate) trait Options: Clone + Send + Sync + 'static {
    /// The policy.
    const POLICY: Policy;
    /// Pairs of settings that exclude each other, and why (`resiliency_rules`' list): overriding
    /// one drops the attribute's other.
    const EXCLUSIVE: &'static [(&'static str, &'static str, &'static str)] = &[];

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
    /// The value in force for `setting` that another setting gives, and that setting's name,
    /// when one does (a breaker's `error_timeout` from its `capacity`).
    fn derived(&self, _setting: &'static str) -> Option<(Value, &'static str)> {
        None
    }
}

/// What a site's options are put in force on: a breaker, a keyed family, a guard, a race.
pub(crate) trait Target<O>: Send + Sync + 'static {
    /// Puts `options`, which break no rule, in force.
    fn apply(&self, options: &O);
}

/// One rule a site's options break: the setting it is written for, why, and the other settings
/// it involves (a change to one of them can break it too).
pub(crate) struct Fault {
    setting: &'static str,
    message: String,
    involves: &'static [&'static str],
    order: Option<Ordering>,
}

impl Fault {
    fn of(setting: &'static str, message: String) -> Self {
        Fault {
            setting,
            message,
            involves: &[],
            order: None,
        }
    }
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.setting, self.message)
    }
}

/// An override as the store hands it to a site: the setting, the value, where it comes from.
type Given = (&'static str, Value, Source);

/// A live site, as the store sees it.
pub(crate) trait Site: Send + Sync + 'static {
    fn policy(&self) -> Policy;
    fn name(&self) -> &str;
    /// The attribute's value for `setting`.
    fn attribute(&self, setting: &'static str) -> Option<Value>;
    /// Checks the attribute's options with `overrides` on top; with `apply`, puts them in force.
    /// `Err` lists each rule broken.
    fn configure(
        &self,
        overrides: &[(&'static str, &Value)],
        apply: bool,
    ) -> Result<(), Vec<Fault>>;
    /// Each setting in force with `overrides` (which break no rule), and where it comes from.
    fn in_force(&self, overrides: &[Given]) -> Vec<Effective>;
}

/// A site: the options its attribute gave, and what they are put in force on.
pub(crate) struct Live<O, T> {
    attribute: O,
    target: T,
}

impl<O: Options, T: Target<O>> Live<O, T> {
    /// The attribute's options with `overrides` on top (an override of one of two settings
    /// that exclude each other drops the attribute's other), and the values refused.
    fn options(&self, overrides: &[(&'static str, &Value)]) -> (O, Vec<Fault>) {
        let mut options = self.attribute.clone();
        let overridden = |setting: &str| overrides.iter().any(|(s, _)| *s == setting);
        for &(a, b, _) in O::EXCLUSIVE {
            if overridden(a) && !overridden(b) {
                options.unset(b);
            } else if overridden(b) && !overridden(a) {
                options.unset(a);
            }
        }
        let mut faults = Vec::new();
        for (setting, value) in overrides {
            if let Err(why) = options.set(setting, value) {
                faults.push(Fault::of(setting, why));
            }
        }
        (options, faults)
    }
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
    ) -> Result<(), Vec<Fault>> {
        let (options, mut faults) = self.options(overrides);
        if faults.is_empty() {
            faults.extend(options.violations().into_iter().map(|v| Fault {
                setting: v.argument(),
                message: v.message().to_owned(),
                involves: v.involves(),
                order: v.order(),
            }));
        }
        if !faults.is_empty() {
            return Err(faults);
        }
        if apply {
            self.target.apply(&options);
        }
        Ok(())
    }

    fn in_force(&self, overrides: &[Given]) -> Vec<Effective> {
        let (options, _) = self.options(&refs(overrides));
        let given = |setting: &str| overrides.iter().find(|(s, _, _)| *s == setting);
        O::POLICY
            .settings()
            .iter()
            .map(|&setting| {
                let (value, source) = if let Some((_, value, source)) = given(setting) {
                    (Some(value.clone()), source.clone())
                } else if let Some((value, from)) = options.derived(setting) {
                    let (from_value, from_source) = match given(from) {
                        Some((_, v, src)) => (Some(v.clone()), src.clone()),
                        None => (options.get(from), Source::Attribute),
                    };
                    let source = Source::Derived {
                        from,
                        value: from_value.map(|v| v.plain()).unwrap_or_default(),
                        source: Box::new(from_source),
                    };
                    (Some(value), source)
                } else {
                    match options.get(setting) {
                        Some(value) => (Some(value), Source::Attribute),
                        None => (None, Source::Default),
                    }
                };
                Effective {
                    setting,
                    value,
                    source,
                }
            })
            .collect()
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
            target: "resiliency::settings",
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
    /// The live sites by policy and name, and by name as variables spell it: indexes in `sites`.
    by_name: BTreeMap<(Policy, String), Vec<usize>>,
    by_spelling: BTreeMap<(Policy, String), Vec<usize>>,
    /// The variables already warned about as a letter or two off a live site's name, and those
    /// already noted (at debug) as naming no site set up so far.
    warned: BTreeSet<String>,
    noted: BTreeSet<String>,
}

/// A live site, the overrides in force there, and the ones it was set up without because they
/// broke a rule there: each of those stays out while the layers give that same value from that
/// same source.
struct Attached {
    site: Arc<dyn Site>,
    applied: Vec<Given>,
    left_out: Vec<Given>,
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
fn same(a: &Given, b: &Given) -> bool {
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

/// Events to emit once the store's lock is released: a subscriber may reach the store (a site's
/// first call) while it handles them.
#[derive(Default)]
struct Later(Vec<Box<dyn FnOnce() + Send>>);

impl Later {
    fn push(&mut self, event: impl FnOnce() + Send + 'static) {
        self.0.push(Box::new(event));
    }
}

/// Runs `f` with the store locked, then emits the events it left in `Later`.
fn locked<R>(f: impl FnOnce(&mut Store, &mut Later) -> R) -> R {
    let mut later = Later::default();
    let result = {
        let mut store = STORE.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut store, &mut later)
    };
    for event in later.0 {
        event();
    }
    result
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
    fn taken(&self, layer: usize, policy: Policy, site: &str) -> bool {
        let index = if layer == ENV {
            &self.by_spelling
        } else {
            &self.by_name
        };
        index.contains_key(&(policy, site.to_owned()))
    }

    /// The name of the live `policy` site that variables spell `spelled` (or of `also`, a site
    /// being set up).
    fn named(&self, policy: Policy, spelled: &str, also: Option<&dyn Site>) -> Option<String> {
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
fn overrides_for(layers: &[Layer; 3], policy: Policy, site: &str) -> Vec<Given> {
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

fn refs(overrides: &[Given]) -> Vec<(&'static str, &Value)> {
    overrides.iter().map(|(s, v, _)| (*s, v)).collect()
}

fn same_all(a: &[Given], b: &[Given]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
}

/// Puts the store's layers, changed already, in force at the live sites `reached` whose
/// overrides they change, after checking every one of them. Refused, with nothing applied, when
/// a rule breaks at one of them: the caller puts the layers back.
fn commit(store: &mut Store, reached: &[usize], later: &mut Later) -> Result<(), SettingsError> {
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
            let site = attached.site.name().to_owned();
            later.push(move || tracing::error!(target: "resiliency::settings", site, ?faults, "a checked change failed"));
        }
        attached.applied = overrides;
    }
    if sites > 0 {
        later.push(
            move || tracing::info!(target: "resiliency::settings", sites, "settings changed"),
        );
    } else {
        later.push(
            || tracing::debug!(target: "resiliency::settings", "settings changed at no live site"),
        );
    }
    Ok(())
}

/// The error for `fault` at `attached` under `overrides`: about the setting the rule is written
/// for when that setting changed (or none it involves did), else about the setting changed, with
/// the rule worded from its side.
fn blame(attached: &Attached, overrides: &[Given], fault: Fault) -> SettingError {
    let site = &attached.site;
    let given = |list: &[Given], setting: &str| {
        list.iter()
            .find(|(s, _, _)| *s == setting)
            .map(|(_, v, src)| (v.clone(), src.clone()))
    };
    let changed =
        |setting: &str| match (given(overrides, setting), given(&attached.applied, setting)) {
            (Some((a, sa)), Some((b, sb))) => !a.same(&b) || sa != sb,
            (None, None) => false,
            _ => true,
        };
    // The value in force for `setting` and where it comes from.
    let in_force = |setting: &'static str| {
        given(overrides, setting).or_else(|| {
            site.attribute(setting)
                .map(|value| (value, Source::Attribute))
        })
    };
    let source_of = |setting: &'static str| {
        in_force(setting)
            .map(|(_, source)| source)
            .unwrap_or(Source::Default)
    };
    let moved = (!changed(fault.setting))
        .then(|| fault.involves.iter().copied().find(|s| changed(s)))
        .flatten();
    let Some(setting) = moved else {
        return SettingError::new(
            site.policy(),
            site.name(),
            fault.setting,
            source_of(fault.setting),
            fault.message,
        );
    };
    let this = match in_force(setting) {
        Some((value, source)) => format!("`{setting}` = {} {}", value.plain(), source.origin()),
        None => format!("`{setting}` left to its default"),
    };
    let other = match in_force(fault.setting) {
        Some((value, source)) => format!(
            "`{}` ({}, {})",
            fault.setting,
            value.plain(),
            source.origin()
        ),
        None => format!("`{}` (the default)", fault.setting),
    };
    let first = fault.involves.first() == Some(&setting);
    let message = match fault.order.filter(|_| first) {
        Some(Ordering::Less) => format!(
            "{this} must stay above {other}, as the rule says: {}",
            fault.message
        ),
        Some(Ordering::Greater) => format!(
            "{this} must stay at or below {other}, as the rule says: {}",
            fault.message
        ),
        _ => format!("{this} breaks a rule of {other}: {}", fault.message),
    };
    SettingError::new(
        site.policy(),
        site.name(),
        setting,
        source_of(setting),
        message,
    )
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
        if let Some(near) = nearest(setting, policy.settings().iter().copied()) {
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
            Policy::RaceRetry => crate::race_retry::check_value(name, value).map_err(probe)?,
            Policy::TooBusy => crate::too_busy::check_value(name, value).map_err(probe)?,
        }
    }
    Ok(name)
}

/// The name among `names` one or two edits away from `given`, if one is.
fn nearest<'a>(given: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .map(|n| (distance(given, n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// The edits (insertions, deletions, substitutions) that turn `a` into `b`.
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

/// Reads the environment, when no site has read it yet (`attaching`, the site being set up, if
/// any): its bad variables are logged and left out, the others make the environment's layer.
fn read_env_once(store: &mut Store, attaching: Option<&dyn Site>, later: &mut Later) {
    if store.env_read {
        return;
    }
    store.env_read = true;
    let (layer, errors) = env_layer(store, std::env::vars_os(), attaching);
    for error in errors {
        later.push(move || tracing::error!(target: "resiliency::settings", %error, "an environment variable is ignored"));
    }
    store.layers[ENV] = layer;
    warn_unmatched_env(store, attaching, later);
}

/// Warns, once per variable, of the environment's overrides for a named site that no live site
/// (nor `attaching`) takes, but whose name is one or two letters off a live site's: most likely
/// a misspelt name. Others may name a site not set up yet (a site is set up by its first call):
/// they are logged at debug, and [`unmatched`] lists them.
fn warn_unmatched_env(store: &mut Store, attaching: Option<&dyn Site>, later: &mut Later) {
    let mut unmatched = Vec::new();
    for ((policy, site, _), (_, source)) in &store.layers[ENV].entries {
        let Source::Environment { variable } = source else {
            continue;
        };
        if site == ALL
            || store.taken(ENV, *policy, site)
            || store.named(*policy, site, attaching).is_some()
            || store.warned.contains(variable)
        {
            continue;
        }
        let mut names: Vec<(String, String)> = store
            .sites
            .iter()
            .map(|a| &*a.site)
            .filter(|s| s.policy() == *policy)
            .map(|s| (env::spell(s.name()), s.name().to_owned()))
            .collect();
        if let Some(s) = attaching.filter(|s| s.policy() == *policy) {
            names.push((env::spell(s.name()), s.name().to_owned()));
        }
        let near = nearest(site, names.iter().map(|(spelled, _)| spelled.as_str()))
            .and_then(|spelled| names.iter().find(|(s, _)| s == spelled))
            .map(|(_, name)| name.clone());
        unmatched.push((variable.clone(), near));
    }
    for (variable, near) in unmatched {
        match near {
            Some(near) => {
                store.warned.insert(variable.clone());
                later.push(move || {
                    tracing::warn!(
                        target: "resiliency::settings",
                        %variable,
                        did_you_mean = %near,
                        "an environment variable names no live site but one a letter or two off: a misspelt name never applies"
                    )
                });
            }
            None if store.noted.insert(variable.clone()) => later.push(move || {
                tracing::debug!(
                    target: "resiliency::settings",
                    %variable,
                    "an environment variable names no site set up so far (a site is set up by its first call; `settings::unmatched` lists the overrides no site has taken)"
                )
            }),
            None => {}
        }
    }
}

/// The environment's layer from `vars`, and the variables refused; a refused variable names
/// its site as the site is named when it is live (or `attaching`).
fn env_layer(
    store: &Store,
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    attaching: Option<&dyn Site>,
) -> (Layer, Vec<SettingError>) {
    let mut layer = Layer::default();
    let mut errors = Vec::new();
    let named = |error: SettingError| match error
        .policy()
        .and_then(|p| store.named(p, error.site(), attaching))
    {
        Some(name) => error.at_site(&name),
        None => error,
    };
    for found in env::read(vars) {
        let (policy, site, setting, value, source) = match found {
            Ok(entry) => entry,
            Err(error) => {
                errors.push(named(error));
                continue;
            }
        };
        match checked(policy, &site, &setting, Some(&value), &source) {
            Ok(name) => {
                layer.entries.insert((policy, site, name), (value, source));
            }
            Err(error) => errors.push(named(error)),
        }
    }
    (layer, errors)
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
    locked(|store, later| {
        read_env_once(store, None, later);
        let name = checked(policy, site, setting, Some(&value), &Source::Code)
            .map_err(|e| SettingsError::new(vec![e]))?;
        let key = (policy, site.to_owned(), name);
        let old = store.layers[CODE]
            .entries
            .insert(key.clone(), (value, Source::Code));
        let reached = store.reached(CODE, policy, site);
        commit(store, &reached, later).inspect_err(|_| put_back(store, CODE, key, old))
    })
}

/// Removes the code's override of `setting` for `site` (or [`ALL`]): the file's, the
/// environment's or the attribute's value applies again. Refused, with nothing changed, should
/// the value that applies then break a rule at a live site.
pub fn unset(policy: Policy, site: &str, setting: &str) -> Result<(), SettingsError> {
    locked(|store, later| {
        let name = checked(policy, site, setting, None, &Source::Code)
            .map_err(|e| SettingsError::new(vec![e]))?;
        let key = (policy, site.to_owned(), name);
        let Some(old) = store.layers[CODE].entries.remove(&key) else {
            return Ok(());
        };
        let reached = store.reached(CODE, policy, site);
        commit(store, &reached, later).inspect_err(|_| put_back(store, CODE, key, Some(old)))
    })
}

/// Makes `layer` the store's layer `index` and puts it in force at every live site it changes;
/// refused, the previous layer stays.
fn replace_layer(
    store: &mut Store,
    index: usize,
    layer: Layer,
    later: &mut Later,
) -> Result<(), SettingsError> {
    let old = std::mem::replace(&mut store.layers[index], layer);
    let reached: Vec<usize> = (0..store.sites.len()).collect();
    commit(store, &reached, later).inspect_err(|_| store.layers[index] = old)
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
    locked(|store, later| {
        read_env_once(store, None, later);
        replace_layer(store, FILE, layer, later)
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
    locked(|store, later| {
        let (layer, errors) = env_layer(store, std::env::vars_os(), None);
        if !errors.is_empty() {
            return Err(SettingsError::new(errors));
        }
        replace_layer(store, ENV, layer, later)?;
        store.env_read = true;
        warn_unmatched_env(store, None, later);
        Ok(())
    })
}

/// Every setting of the live `policy` site `site`: the value in force and where it comes from,
/// one [`Effective`] per setting of [`Policy::settings`]. A value another setting gives (a
/// breaker's `error_timeout` from its `capacity`) is reported with [`Source::Derived`]; the
/// value is `None` where the built-in default applies. `None` when no such site has been set up:
/// a `#[breaker]`, `#[too_busy]` or `#[race_retry]` site is set up by its first call.
pub fn effective(policy: Policy, site: &str) -> Option<InForce> {
    locked(|store, _| {
        let i = *store.by_name.get(&(policy, site.to_owned()))?.first()?;
        let attached = &store.sites[i];
        Some(InForce(attached.site.in_force(&attached.applied)))
    })
}

/// The overrides for a named site that no live site has taken: the policy, the site as written,
/// the setting and its source. A site is set up by its first call, so before then its overrides
/// are listed here too; after a warm-up, what is left is most likely a misspelt name.
pub fn unmatched() -> Vec<(Policy, String, &'static str, Source)> {
    locked(|store, _| {
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
    locked(|store, _| {
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
    locked(|store, later| {
        read_env_once(store, Some(&*site), later);
        // A variable one or two letters off this site's name: most likely misspelt.
        warn_unmatched_env(store, Some(&*site), later);
        let mut overrides = overrides_for(&store.layers, site.policy(), site.name());
        let mut left_out = Vec::new();
        let mut leave_out = |entry: Given, message: String, later: &mut Later| {
            let error = SettingError::new(
                site.policy(),
                site.name(),
                entry.0,
                entry.2.clone(),
                message,
            );
            later.push(move || tracing::error!(target: "resiliency::settings", %error, "an override is left out"));
            left_out.push(entry);
        };
        while let Err(faults) = site.configure(&refs(&overrides), true) {
            if overrides.is_empty() {
                // The attribute's options were checked by `usable`: cannot happen.
                let name = site.name().to_owned();
                later.push(move || tracing::error!(target: "resiliency::settings", site = name, ?faults, "a site's own options failed"));
                break;
            }
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
                    leave_out(entry, message, later);
                }
            }
            if overrides.len() == before {
                // The fault lies with settings no override gives: leave every override out.
                for entry in overrides.drain(..) {
                    let message = "left out with the other overrides of this site, which together break a rule";
                    leave_out(entry, message.to_owned(), later);
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
