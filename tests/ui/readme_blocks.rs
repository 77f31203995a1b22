//! The fenced code blocks of `README.md`, read by the build script (which writes the rust blocks
//! out as one source file, `README.md.rs`) and by the `readme` test (which parses the TOML ones).

use std::path::Path;

/// The README, from this package's directory.
pub(crate) fn readme(manifest_dir: &str) -> String {
    let path = Path::new(manifest_dir).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md is readable")
}

/// A fenced block of the README: its language and first line (1-based), and its lines.
pub(crate) struct Block {
    pub(crate) lang: String,
    pub(crate) first_line: usize,
    pub(crate) lines: Vec<String>,
}

pub(crate) fn blocks(text: &str) -> Vec<Block> {
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
