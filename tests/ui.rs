//! Compile tests for the attributes, one folder per attribute:
//!
//! - `ui/breaker/fail/`, `ui/race_retry/fail/`, `ui/too_busy/fail/`: bad input to that attribute,
//!   which must fail with the message pinned in the `.stderr` beside each case;
//! - `ui/common/fail/`: errors of the argument and duration parser the three attributes share
//!   (argument syntax, `crate = "..."`, duration literals), shown on `#[breaker]`;
//! - `ui/axum/fail/`: cases that need the `axum` feature, run when it is on, as with
//!   `cargo test --all-features`;
//! - `ui/race_retry/pass/`: the one shape that needs a crate of its own (`crate = "crate::..."`
//!   names a path from the crate root).
//!
//! Every other shape that must compile and run is an ordinary test, `tests/shapes_*.rs`.
//!
//! Regenerate the messages with `TRYBUILD=overwrite cargo test --all-features --test ui`, then
//! read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/race_retry/pass/*.rs");
    for attribute in ["common", "breaker", "race_retry", "too_busy"] {
        t.compile_fail(format!("tests/ui/{attribute}/fail/*.rs"));
    }
    if cfg!(feature = "axum") {
        t.compile_fail("tests/ui/axum/fail/*.rs");
    }
}
