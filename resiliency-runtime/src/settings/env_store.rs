//! The environment's layer of the store: read once, its bad variables reported, and variables
//! that name no live site warned about when a letter or two off one.

use super::blame::{checked, nearest};
use super::site::Site;
use super::store::{Layer, Store, ENV, FILE};
use super::{env, SettingError, Source, ALL};

/// Reads the environment, when no site has read it yet (`attaching`, the site being set up, if
/// any): its bad variables are logged and left out, the others make the environment's layer.
pub(super) fn read_env_once(store: &mut Store, attaching: Option<&dyn Site>) {
    if store.env_read {
        return;
    }
    store.env_read = true;
    let (layer, errors) = env_layer(store, std::env::vars_os(), attaching);
    for error in errors {
        crate::later::emit(
            move || tracing::error!(target: "resiliency::settings", %error, "an environment variable is ignored"),
        );
    }
    store.layers[ENV] = layer;
    warn_unmatched_env(store, attaching);
}

/// Warns, once per override, of the environment's and the file's overrides for a named site that
/// no live site (nor `attaching`) takes, but whose name is one or two letters off a live site's:
/// most likely a misspelt name. Others may name a site not set up yet (a site is set up by its
/// first call): they are logged at debug, and [`unmatched`] lists them.
pub(super) fn warn_unmatched_env(store: &mut Store, attaching: Option<&dyn Site>) {
    let mut unmatched = Vec::new();
    for layer in [FILE, ENV] {
        for ((policy, site, _), (_, source)) in &store.layers[layer].entries {
            let what = match source {
                Source::Environment { variable } => variable.clone(),
                Source::File { .. } => format!("[{policy}.\"{site}\"] in {source}"),
                _ => continue,
            };
            let named = if layer == ENV {
                store.named(*policy, site, attaching).is_some()
            } else {
                attaching.is_some_and(|s| s.policy() == *policy && s.name() == site)
            };
            if site == ALL
                || store.taken(layer, *policy, site)
                || named
                || store.warned.contains(&what)
            {
                continue;
            }
            let spell = |name: &str| {
                if layer == ENV {
                    env::spell(name)
                } else {
                    name.to_owned()
                }
            };
            let mut names: Vec<(String, String)> = store
                .sites
                .iter()
                .map(|a| &*a.site)
                .filter(|s| s.policy() == *policy)
                .map(|s| (spell(s.name()), s.name().to_owned()))
                .collect();
            if let Some(s) = attaching.filter(|s| s.policy() == *policy) {
                names.push((spell(s.name()), s.name().to_owned()));
            }
            let near = nearest(site, names.iter().map(|(spelled, _)| spelled.as_str()))
                .and_then(|spelled| names.iter().find(|(s, _)| s == spelled))
                .map(|(_, name)| name.clone());
            unmatched.push((layer, what, near));
        }
    }
    for (layer, what, near) in unmatched {
        match (near, layer) {
            (Some(near), ENV) => {
                store.warned.insert(what.clone());
                crate::later::emit(move || {
                    tracing::warn!(
                        target: "resiliency::settings",
                        variable = %what,
                        did_you_mean = %near,
                        "an environment variable names no live site but one a letter or two off: a misspelt name never applies"
                    )
                });
            }
            (Some(near), _) => {
                store.warned.insert(what.clone());
                crate::later::emit(move || {
                    tracing::warn!(
                        target: "resiliency::settings",
                        site = %what,
                        did_you_mean = %near,
                        "a settings file names no live site but one a letter or two off: a misspelt name never applies"
                    )
                });
            }
            (None, ENV) if store.noted.insert(what.clone()) => crate::later::emit(move || {
                tracing::debug!(
                    target: "resiliency::settings",
                    variable = %what,
                    "an environment variable names no site set up so far (a site is set up by its first call; `settings::unmatched` lists the overrides no site has taken)"
                )
            }),
            (None, _) if store.noted.insert(what.clone()) => crate::later::emit(move || {
                tracing::debug!(
                    target: "resiliency::settings",
                    site = %what,
                    "a settings file names no site set up so far (a site is set up by its first call; `settings::unmatched` lists the overrides no site has taken)"
                )
            }),
            (None, _) => {}
        }
    }
}

/// The environment's layer from `vars`, and the variables refused; a refused variable names
/// its site as the site is named when it is live (or `attaching`).
pub(super) fn env_layer(
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
