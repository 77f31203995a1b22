//! Compile errors of the attributes (trybuild), one folder per attribute or concern, each found
//! here by its `fail/` folder (a new attribute's cases need no line in this file):
//!
//! - `ui/breaker/fail/`, `ui/race_retry/fail/`, `ui/rate_limit/fail/`, `ui/timeout/fail/`,
//!   `ui/too_busy/fail/`: bad input to that attribute, which must fail with the message pinned in
//!   the `.stderr` beside each case;
//! - `ui/common/fail/`: errors of the argument and duration parser the three attributes share
//!   (argument syntax, `crate = "..."`, duration literals), shown on `#[breaker]`;
//! - `ui/fallback/fail/`: bad uses of `fallback` and `fallback_on`, which every attribute takes
//!   (a fallback not found, of the wrong arity, reason or return type; arguments it cannot get);
//! - `ui/retry_hint/fail/`: the builders' hinted calls on an error type without `RetryHint`, run
//!   with the `anyhow` feature and `tower` or `axum` (each adds a type the message lists);
//! - `ui/axum/fail/`: cases that need the `axum` feature, run when it is on, as with
//!   `cargo test --all-features`;
//! - `ui/tower/fail/`: type-level requirements of the `tower` layers (a request or a service the
//!   race layer must clone), run when the `tower` feature is on;
//!
//! The shapes that must compile and need a crate of their own (`crate = "crate::..."` names a
//! path from the crate root; settings written as consts, paths and expressions name items of the
//! crate) are tests of this package, `ui/<attribute>/pass/*.rs`, each its own crate; every other
//! shape that must compile and run is a module of the `suite` test, `tests/suite/shapes_*.rs`.
//! With no passing case, trybuild only checks its cases and their dependencies, and never builds
//! them.
//!
//! Regenerate the messages with
//! `TRYBUILD=overwrite cargo test --all-features -p resiliency-compile-tests --test ui`, then read
//! the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    // The folders that need features: run when the test has them.
    let gated = [
        ("axum", cfg!(feature = "axum")),
        ("tower", cfg!(feature = "tower")),
        // The compiler lists the types that implement `RetryHint`, which the features add to.
        (
            "retry_hint",
            cfg!(all(
                feature = "anyhow",
                any(feature = "tower", feature = "axum")
            )),
        ),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("fail").is_dir())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    for folder in &folders {
        match gated.iter().find(|(name, _)| name == folder) {
            Some((_, false)) => {}
            _ => t.compile_fail(format!("{folder}/fail/*.rs")),
        }
    }
}
