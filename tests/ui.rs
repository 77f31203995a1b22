//! Compile tests for the attributes: bad input that must fail with the message pinned in the
//! `.stderr` beside each case (`ui/fail`), and the shape that needs a crate of its own (`ui/pass`).
//! Shapes that must compile and run are ordinary tests, `tests/shapes_*.rs`. Cases that need the
//! `axum` feature (`ui/axum/`) run when it is on, as with `cargo test --all-features`.
//!
//! Regenerate the messages with `TRYBUILD=overwrite cargo test --all-features --test ui`, then
//! read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
    if cfg!(feature = "axum") {
        t.compile_fail("tests/ui/axum/fail/*.rs");
    }
}
