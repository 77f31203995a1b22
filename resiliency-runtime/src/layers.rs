//! The runtime's layers, read from its sources: the option machinery (`options/`) names neither
//! the settings by name nor a policy, the settings by name (`settings/`) name no policy, nor the
//! generated code's support, and the metrics' shared part (`metrics.rs`) names no policy (each
//! policy's series are its folder's `meter`); so a policy is added without touching any of them.
//! Doc comments aside.

use std::path::{Path, PathBuf};

/// The modules of the crate above the settings, and the root's re-exports of them.
const POLICIES: &[&str] = &[
    "breaker",
    "Breaker",
    "BreakerBuilder",
    "KeyedBreaker",
    "too_busy",
    "race_retry",
    "timeout",
    "rate_limit",
    "tower",
    "metrics",
    "fallback",
    "http",
    "named",
    "__private",
];

#[test]
fn nothing_in_settings_names_a_policy() {
    let files = below("settings", POLICIES);
    assert!(files >= 10, "read {files} files of settings/");
}

#[test]
fn nothing_in_options_names_the_settings_or_a_policy() {
    let files = below("options", &[POLICIES, &["settings"]].concat());
    assert!(files >= 4, "read {files} files of options/");
}

#[test]
fn nothing_in_metrics_names_a_policy() {
    let above: Vec<&str> = POLICIES
        .iter()
        .copied()
        .filter(|m| *m != "metrics")
        .collect();
    let files = below("metrics", &above);
    assert!(files >= 1, "read {files} files of metrics");
}

#[test]
fn a_policy_named_below_is_found() {
    let found = |code: &str| named(code, POLICIES);
    assert_eq!(found("use crate::breaker::Breaker;"), ["breaker"]);
    assert_eq!(found("let b = crate::Breaker::builder(n);"), ["Breaker"]);
    assert_eq!(
        found("use crate::{\n    later,\n    too_busy::TooBusy,\n};"),
        ["too_busy"]
    );
    assert_eq!(found("$crate::tower::BoxError"), ["tower"]);
    assert_eq!(found("use super::super::race_retry;"), ["super::super"]);
    assert!(found("use crate::later; use crate::{ConfigError, later};").is_empty());
    // Doc comments may name anything.
    assert!(found("/// See [`Breaker`](crate::Breaker).\nfn f() {}").is_empty());
}

/// Reads every file of the module `src/<module>` (`<module>.rs`, and the folder `<module>/` and
/// its folders), failing on each code line that names one of `above`; returns the number of
/// files read.
fn below(module: &str, above: &[&str]) -> usize {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let folder = src.join(module);
    if folder.is_dir() {
        sources(&folder, &mut files);
    }
    let mut faults = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for name in named(&text, above) {
            faults.push(format!("{}: names `{name}`", path.display()));
        }
    }
    assert!(
        faults.is_empty(),
        "{module} names a module above it:\n{}",
        faults.join("\n")
    );
    files.len()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names among `above` that `text`'s code (comments aside) takes from the crate's root
/// (`crate::breaker`, `$crate::tower`, or inside `crate::{...}`), and each `super::super`.
fn named(text: &str, above: &[&str]) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| format!("{line}\n"))
        .collect();
    let mut out: Vec<String> = code.matches("super::super").map(str::to_owned).collect();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let firsts = match rest.strip_prefix('{') {
            Some(group) => firsts(group),
            None => vec![ident(rest)],
        };
        out.extend(
            firsts
                .into_iter()
                .filter(|name| above.contains(name))
                .map(str::to_owned),
        );
    }
    out
}

/// The first segment of each path in a `use` group, `group` starting after its `{`.
fn firsts(group: &str) -> Vec<&str> {
    let mut out = vec![ident(group.trim_start())];
    let mut depth = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => out.push(ident(group[i + 1..].trim_start())),
            _ => {}
        }
    }
    out
}

/// The identifier `text` starts with.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}
