//! Compile tests for the attributes: shapes that must compile and run (`ui/pass`), and bad input
//! that must fail with the message pinned in the `.stderr` beside each case (`ui/fail`). Cases that
//! need the `axum` feature (`ui/axum/`) run when it is on, as with `cargo test --all-features`.
//!
//! Regenerate the messages with `TRYBUILD=overwrite cargo test --all-features --test ui`, then
//! read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
    if cfg!(feature = "axum") {
        t.pass("tests/ui/axum/pass/*.rs");
        t.compile_fail("tests/ui/axum/fail/*.rs");
    }
}
