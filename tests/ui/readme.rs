//! Every code block of `README.md` is checked as a reader would copy it.
//!
//! - ```` ```rust ```` blocks are compiled, all of them in one trybuild pass case, against this
//!   crate with the features the test runs with (`cargo test --all-features`). Each block becomes
//!   a module placed at the block's own lines, so the compiler's `readme_md.rs:LINE` is the line
//!   of `README.md`. A block is a list of items (`use`, `fn`, `impl`, ...): a statement belongs
//!   inside a fn the block writes. The only thing added is [`prelude`]: the reader's own domain
//!   types the README leaves undefined (`Card`, `PayError`, ...). Every library item a block uses
//!   must be imported or spelled in the block.
//! - ```` ```toml ```` blocks must parse as TOML, and a block of settings (a `[breaker.*]`,
//!   `[race_retry.*]` or `[too_busy.*]` table) must be read by `Overrides::from_toml`, each
//!   setting one its policy takes.

use std::path::Path;

/// The reader's types, placeholders in the README's signatures, declared in each block's module
/// (a block may write `impl Users`). Library items are not declared here: a block that uses one
/// without importing it does not compile.
const TYPES: &[&str] = &[
    "Card", "Receipt", "Request", "Response", "User", "Users", "T",
];

/// The reader's error types: each is an `Error` and `From<Rejected>`, as the attributes need, and
/// `From<std::io::Error>` for a block that uses `?` on I/O.
const ERRORS: &[&str] = &["PayError", "AppError", "DbError", "MyError", "E"];

/// `readme_prelude!()` declares [`TYPES`] and [`ERRORS`]: the macro's definition is the first
/// line of the generated file, so that every other line is the README's own.
fn prelude() -> String {
    let mut items = String::new();
    for name in TYPES {
        items += &format!("pub struct {name}; ");
    }
    for name in ERRORS {
        items += &format!(
            "#[derive(Debug)] pub struct {name}; \
             impl std::fmt::Display for {name} {{ \
                 fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{ \
                     f.write_str(\"{name}\") }} }} \
             impl std::error::Error for {name} {{}} \
             impl From<resiliency::Rejected> for {name} {{ \
                 fn from(_: resiliency::Rejected) -> Self {{ {name} }} }} \
             impl From<std::io::Error> for {name} {{ \
                 fn from(_: std::io::Error) -> Self {{ {name} }} }} "
        );
    }
    format!(
        "#![deny(warnings)] #![allow(dead_code, unused_variables)] \
         macro_rules! readme_prelude {{ () => {{ {items} }}; }}"
    )
}

/// A fenced block of the README: its language and first line (1-based), and its lines.
struct Block {
    lang: String,
    first_line: usize,
    lines: Vec<String>,
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md is readable")
}

fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Block {
                    lang: info.trim().to_owned(),
                    first_line: index + 2,
                    lines: Vec::new(),
                })
            }
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some(block), None) => block.lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    assert!(
        open.is_none(),
        "README.md: the block opened at line {} is never closed",
        open.unwrap().first_line - 1
    );
    blocks
}

/// One source file holding every rust block as a module at the block's own lines: the module
/// opens on the opening fence's line and closes on the closing fence's line.
fn rust_source(blocks: &[&Block]) -> String {
    let mut lines: Vec<String> = vec![prelude()];
    for block in blocks {
        let fence = block.first_line - 1;
        assert!(lines.len() < fence, "blocks overlap");
        lines.resize(fence - 1, String::new());
        lines.push(format!(
            "mod readme_line_{} {{ readme_prelude!();",
            block.first_line
        ));
        lines.extend(block.lines.iter().cloned());
        lines.push("}".to_owned());
    }
    lines.push("fn main() {}".to_owned());
    lines.join("\n")
}

#[test]
fn rust_blocks_compile() {
    let text = readme();
    let blocks = blocks(&text);
    let rust: Vec<&Block> = blocks.iter().filter(|b| b.lang == "rust").collect();
    assert!(!rust.is_empty(), "README.md has no rust block");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("readme_md.rs");
    std::fs::write(&file, rust_source(&rust)).unwrap();

    let lines: Vec<String> = rust.iter().map(|b| b.first_line.to_string()).collect();
    let outcome = std::panic::catch_unwind(|| {
        let t = trybuild::TestCases::new();
        t.pass(&file);
        // trybuild builds and runs its cases when dropped.
    });
    if outcome.is_err() {
        panic!(
            "a rust block of README.md does not compile (blocks at lines {}); in the errors \
             above, `readme_md.rs:LINE` is README.md's line and `readme_line_N` the block \
             starting at line N; the file is {}",
            lines.join(", "),
            file.display()
        );
    }
}

#[test]
fn toml_blocks_parse() {
    let text = readme();
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
        let policies = ["breaker", "race_retry", "too_busy"];
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
