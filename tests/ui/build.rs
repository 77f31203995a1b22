//! Writes the README's rust blocks out as one source file, `$OUT_DIR/README.md.rs`, which the
//! `readme` test compiles (`readme.rs`): each block a module placed at the block's own lines, so
//! that the compiler's `README.md.rs:LINE` is the line of `README.md`. A block is a list of
//! items (`use`, `fn`, `impl`, ...): a statement belongs inside a fn the block writes. The only
//! thing added is the prelude below: the reader's own domain types the README leaves undefined
//! (`Card`, `PayError`, ...). Every library item a block uses must be imported or spelled in the
//! block.

#[path = "readme_blocks.rs"]
mod readme_blocks;

use readme_blocks::Block;

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
    format!("macro_rules! readme_prelude {{ () => {{ {items} }}; }}")
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
    lines.join("\n")
}

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    println!("cargo:rerun-if-changed=../../README.md");
    println!("cargo:rerun-if-changed=readme_blocks.rs");
    let text = readme_blocks::readme(&manifest_dir);
    let blocks = readme_blocks::blocks(&text);
    let rust: Vec<&Block> = blocks.iter().filter(|b| b.lang == "rust").collect();
    assert!(!rust.is_empty(), "README.md has no rust block");
    let out = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets it"))
        .join("README.md.rs");
    std::fs::write(out, rust_source(&rust)).expect("OUT_DIR is writable");
}
