//! Compile tests for the attributes: shapes that must compile and run (`ui/pass`), and bad input
//! that must fail with the message pinned in the `.stderr` beside each case (`ui/fail`).
//!
//! Regenerate the messages with `TRYBUILD=overwrite cargo test --test ui`, then read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
