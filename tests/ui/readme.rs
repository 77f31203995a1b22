//! Every code block of `README.md` is checked as a reader would copy it.
//!
//! - ```` ```rust ```` blocks are compiled into this test, against this crate with the features
//!   the test runs with (`cargo test --all-features`): the build script writes them out as
//!   `README.md.rs`, each block a module at the block's own lines, so that a compile error's
//!   `README.md.rs:LINE` is the line of `README.md` and `readme_line_N` the block starting at
//!   line N. The build script's docs say what it adds (the reader's own types).
//! - ```` ```toml ```` blocks must parse as TOML, and a block of settings (a `[breaker.*]`,
//!   `[race_retry.*]`, ... table: any policy's) must be read by `Overrides::from_toml`, each
//!   setting one its policy takes.
#![deny(warnings)]
#![allow(dead_code, unused_variables)]

#[path = "readme_blocks.rs"]
#[allow(dead_code)]
mod readme_blocks;

use readme_blocks::{blocks, readme};

/// The README's rust blocks, each a module `readme_line_N`.
mod rust_blocks {
    include!(concat!(env!("OUT_DIR"), "/README.md.rs"));
}

#[test]
fn toml_blocks_parse() {
    let text = readme(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for block in blocks(&text).iter().filter(|b| b.lang == "toml") {
        seen += 1;
        let source = block.lines.join("\n");
        let table: toml::Table = toml::from_str(&source).unwrap_or_else(|error| {
            panic!(
                "README.md: the toml block at line {} does not parse: {error}",
                block.first_line
            )
        });
        let policies = resiliency::settings::Policy::ALL.map(|policy| policy.name());
        if table.keys().any(|key| policies.contains(&key.as_str())) {
            let name = format!("README.md (block at line {})", block.first_line);
            let overrides = resiliency::settings::Overrides::from_toml(&name, &source)
                .unwrap_or_else(|error| panic!("{error}"));
            for entry in overrides.entries() {
                let valid = entry.policy.settings();
                assert!(
                    valid.contains(&entry.setting.as_str()),
                    "README.md:{}: `{}` is not a setting of {}; they are {valid:?}",
                    block.first_line - 1 + entry.line.unwrap_or(1) as usize,
                    entry.setting,
                    entry.policy.name()
                );
            }
        }
    }
    assert!(seen > 0, "README.md has no toml block");
}
