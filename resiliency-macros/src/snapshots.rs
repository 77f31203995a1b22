//! Representative expansions, kept in `tests/expand/*.expanded.rs` next to their inputs and compared
//! here. Refresh them with `SNAPSHOTS=overwrite cargo test -p resiliency-macros`.

use std::path::Path;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Expands every `#[breaker]` and `#[too_busy]` on the fns and methods of `source`.
fn expand_file(source: &str) -> String {
    let mut file: syn::File = syn::parse_str(source).expect("the input parses");
    for item in &mut file.items {
        match item {
            syn::Item::Fn(func) => {
                if let Some((expand, args)) = take_attr(&mut func.attrs) {
                    let out = expand(args, func.to_token_stream());
                    *func = syn::parse2(out).expect("the expansion parses");
                }
            }
            syn::Item::Impl(block) => {
                for item in &mut block.items {
                    if let syn::ImplItem::Fn(func) = item {
                        if let Some((expand, args)) = take_attr(&mut func.attrs) {
                            let out = expand(args, func.to_token_stream());
                            *func = syn::parse2(out).expect("the expansion parses");
                        }
                    }
                }
            }
            _ => {}
        }
    }
    prettyplease::unparse(&file)
}

type Expand = fn(TokenStream, TokenStream) -> TokenStream;

/// Each policy's attribute and its expansion, from the rows of `resiliency_rules::policies!`
/// that follow: `#[breaker]` expands with `crate::breaker::breaker`.
macro_rules! attributes {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident: $name:ident, env $variable:literal,
            options $options:ident { $($field:ident: $value:expr),* },
            rules $rules:ident, table $table:ident;
    )*) => {
        &[$((stringify!($name), crate::$name::$name as Expand)),*]
    };
}

/// Takes the first known attribute off `attrs`, returning its expansion and arguments.
fn take_attr(attrs: &mut Vec<syn::Attribute>) -> Option<(Expand, TokenStream)> {
    let known: &[(&str, Expand)] = resiliency_rules::policies!(attributes! {});
    let (position, expand) = attrs.iter().enumerate().find_map(|(i, a)| {
        known
            .iter()
            .find(|(name, _)| a.path().is_ident(name))
            .map(|(_, expand)| (i, *expand))
    })?;
    let args = match attrs.remove(position).meta {
        syn::Meta::List(list) => list.tokens,
        _ => TokenStream::new(),
    };
    Some((expand, args))
}

#[test]
fn expansions_match_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let overwrite = std::env::var("SNAPSHOTS").is_ok_and(|v| v == "overwrite");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/expand exists")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_string_lossy().ends_with(".rs") && !p.to_string_lossy().ends_with(".expanded.rs")
        })
        .collect();
    inputs.sort();
    assert!(
        !inputs.is_empty(),
        "no snapshot inputs in {}",
        dir.display()
    );
    let mut stale = Vec::new();
    for input in inputs {
        let expected_path = input.with_extension("expanded.rs");
        let actual = expand_file(&std::fs::read_to_string(&input).unwrap());
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            if overwrite {
                std::fs::write(&expected_path, &actual).unwrap();
            } else {
                stale.push(format!(
                    "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
                    expected_path.display()
                ));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "expansions changed (refresh with SNAPSHOTS=overwrite):\n{}",
        stale.join("\n")
    );
}
