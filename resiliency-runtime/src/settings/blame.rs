//! Refusals worded for people: a rule broken at a site, reported about the setting that changed,
//! with its source and line, and names a letter or two off the one meant.

use super::site::{Fault, Given};
use super::store::Attached;
use std::cmp::Ordering;

use super::{Policy, SettingError, Source, Value};

/// The error for `fault` at `attached` under `overrides`: about the setting the rule is written
/// for when that setting changed (or none it involves did), else about the setting changed, with
/// the rule worded from its side.
pub(super) fn blame(attached: &Attached, overrides: &[Given], fault: Fault) -> SettingError {
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
pub(super) fn checked(
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
        super::alone::judge(policy, name, value)
            .map_err(|why| SettingError::new(policy, site, setting, source.clone(), why))?;
    }
    Ok(name)
}

/// The name among `names` one or two edits away from `given`, if one is.
pub(super) fn nearest<'a>(
    given: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    names
        .into_iter()
        .map(|n| (distance(given, n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// The edits (insertions, deletions, substitutions) that turn `a` into `b`.
pub(super) fn distance(a: &str, b: &str) -> usize {
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
