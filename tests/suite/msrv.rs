//! The declared `rust-version` is true: no dependency that a user of the published packages
//! builds (any feature on, dev-dependencies apart) declares a newer one in `Cargo.lock`.
//!
//! `cargo metadata --locked` reads the lock; this walks the dependency graph from every
//! published workspace package over normal and build edges (the loom models' `cfg(resiliency_loom)` dependencies
//! apart) and compares each package's
//! `rust-version` with the workspace's. (Std APIs newer than the MSRV in our own code are
//! caught by clippy's `incompatible_msrv` lint, on by default, under `-D warnings` in CI.)

use std::collections::{HashMap, HashSet};
use std::process::Command;

use serde_json::Value;

/// `1.82`, `1.82.0` → `(1, 82, 0)`.
fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

/// Locked packages whose `rust-version` is above `msrv`, reached from `roots` over normal and
/// build dependencies: `(name@version, its rust-version)`.
fn above(metadata: &Value, roots: &[String], msrv: (u64, u64, u64)) -> Vec<(String, String)> {
    let packages: HashMap<&str, &Value> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().expect("id"), p))
        .collect();
    let nodes: HashMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .expect("a resolve graph")
        .iter()
        .map(|n| (n["id"].as_str().expect("id"), n))
        .collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = roots.iter().map(String::as_str).collect();
    let mut found = Vec::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let package = packages[id];
        if let Some(rust) = package["rust_version"].as_str() {
            if version(rust) > msrv {
                found.push((
                    format!(
                        "{}@{}",
                        package["name"].as_str().unwrap(),
                        package["version"].as_str().unwrap()
                    ),
                    rust.to_owned(),
                ));
            }
        }
        for dep in nodes[id]["deps"].as_array().into_iter().flatten() {
            let built = dep["dep_kinds"].as_array().into_iter().flatten().any(|k| {
                // The loom models' dependencies are ours alone (`--cfg resiliency_loom`).
                let ours = k["target"]
                    .as_str()
                    .is_some_and(|t| t.contains("resiliency_loom"));
                (k["kind"].is_null() || k["kind"] == "build") && !ours
            });
            if built {
                stack.push(dep["pkg"].as_str().expect("pkg"));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn no_locked_dependency_needs_a_newer_rust_than_ours() {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--all-features",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let members: HashSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let published: Vec<&Value> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| members.contains(p["id"].as_str().unwrap()))
        // `publish = false` is `[]`; anything else publishes.
        .filter(|p| p["publish"].as_array().is_none_or(|r| !r.is_empty()))
        .collect();
    assert!(published.len() >= 4, "the facade and its three crates");
    let declared: HashSet<&str> = published
        .iter()
        .map(|p| {
            p["rust_version"]
                .as_str()
                .expect("every package declares rust-version")
        })
        .collect();
    assert_eq!(declared.len(), 1, "one MSRV, declared once: {declared:?}");
    let msrv = *declared.iter().next().unwrap();
    let roots: Vec<String> = published
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect();
    let found = above(&metadata, &roots, version(msrv));
    assert!(
        found.is_empty(),
        "rust-version = \"{msrv}\", but these locked dependencies declare a newer one: {found:?}"
    );
}
