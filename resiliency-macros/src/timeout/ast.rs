//! The arguments of `#[timeout(...)]`, each kept with its span: `total` (a duration, or an
//! expression of type `Duration`), which may also come first without its name
//! (`#[timeout("2s")]`, see [`positional`]).

use proc_macro2::{Ident, Literal, TokenStream, TokenTree};
use quote::quote;
use syn::LitStr;

use crate::driver::Errors;
use crate::value::Str;

resiliency_rules::timeout_settings!(crate::driver::arguments! {
    /// `#[timeout(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct Timeout {
        name: LitStr = Str("payments"),
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::TimeoutOptions;
});

/// `#[timeout("2s", ...)]` read as `#[timeout(total = "2s", ...)]`: a literal first, with no
/// name, is the `total` (its `total` spanned at the literal). A literal elsewhere, a second one,
/// or one beside `total = ...` is refused in `errors`, at the token to remove or move, and left
/// out (or read as the `total` if there is no other), so that the driver does not also report a
/// malformed list or a missing `total`. Anything else is left as written, for the driver to read
/// or refuse.
pub(crate) fn positional(args: TokenStream, errors: &mut Errors) -> TokenStream {
    let (deferred, args) = crate::func::take_deferred(args);
    let arguments = split(args);
    let named_total = arguments.iter().position(is_named_total);
    let mut total: Option<(usize, Literal)> = None;
    let mut kept: Vec<TokenStream> = Vec::new();
    for (at, argument) in arguments.into_iter().enumerate() {
        if let Some(literal) = lone_literal(&argument) {
            match (&total, named_total) {
                (Some((_, first)), _) => errors.push(
                    literal.span(),
                    format_args!(
                        "`#[timeout]` takes one duration without a name, the `total`, and `{first}` is it; remove `{literal}`"
                    ),
                ),
                (None, Some(_)) if at != 0 => errors.push(
                    literal.span(),
                    format_args!(
                        "`{literal}` without a name would be the `total`, which `total = ...` already gives; remove it"
                    ),
                ),
                (None, _) => {
                    if at != 0 {
                        errors.push(
                            literal.span(),
                            format_args!(
                                "a duration without a name is the `total` only when it comes first: write `#[timeout({literal}, ...)]`, or `total = {literal}`"
                            ),
                        );
                    }
                    let name = Ident::new("total", literal.span());
                    kept.push(quote!(#name = #literal));
                    total = Some((at, literal));
                }
            }
            continue;
        }
        if let (Some((0, first)), Some(named)) = (&total, named_total) {
            if named == at {
                let name = argument
                    .clone()
                    .into_iter()
                    .next()
                    .expect("a named `total`");
                errors.push(
                    name.span(),
                    format_args!(
                        "`total` is given twice: `{first}`, written first without a name, is the `total`; keep one of them"
                    ),
                );
                continue;
            }
        }
        kept.push(argument);
    }
    let named = join(kept);
    if deferred {
        let marker = Ident::new(crate::func::DEFERRED, proc_macro2::Span::call_site());
        quote!(#marker, #named)
    } else {
        named
    }
}

/// The arguments between the top-level commas, each as written (a comma inside a group stays
/// in its group; one between `<` and `>` splits a value, which [`join`] puts back as it was).
fn split(args: TokenStream) -> Vec<TokenStream> {
    let mut arguments = vec![TokenStream::new()];
    for token in args {
        match &token {
            TokenTree::Punct(punct) if punct.as_char() == ',' => {
                arguments.push(TokenStream::new());
            }
            _ => arguments.last_mut().expect("one at least").extend([token]),
        }
    }
    if arguments.len() == 1 && arguments[0].is_empty() {
        arguments.clear();
    }
    arguments
}

/// The arguments [`split`] took apart, with their commas back.
fn join(arguments: Vec<TokenStream>) -> TokenStream {
    let mut out = TokenStream::new();
    for (at, argument) in arguments.into_iter().enumerate() {
        if at > 0 {
            out.extend(quote!(,));
        }
        out.extend(argument);
    }
    out
}

/// The literal an argument is, when it is one literal alone (`"2s"`, `2`).
fn lone_literal(argument: &TokenStream) -> Option<Literal> {
    let mut tokens = argument.clone().into_iter();
    match (tokens.next(), tokens.next()) {
        (Some(TokenTree::Literal(literal)), None) => Some(literal),
        _ => None,
    }
}

/// Whether an argument is `total = ...`.
fn is_named_total(argument: &TokenStream) -> bool {
    let mut tokens = argument.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next()),
        (Some(TokenTree::Ident(name)), Some(TokenTree::Punct(eq)))
            if name == "total" && eq.as_char() == '='
    )
}

#[cfg(test)]
mod tests {
    use super::positional;
    use crate::driver::Errors;

    /// The arguments as the driver reads them, and the errors found.
    fn read(args: &str) -> (String, Vec<String>) {
        let mut errors = Errors::default();
        let args = positional(args.parse().unwrap(), &mut errors).to_string();
        let errors = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        };
        (args, errors)
    }

    fn read_ok(args: &str) -> String {
        let (args, errors) = read(args);
        assert!(errors.is_empty(), "{errors:?}");
        args
    }

    #[test]
    fn a_literal_first_is_the_total() {
        assert_eq!(read_ok("\"2s\""), "total = \"2s\"");
        assert_eq!(
            read_ok("\"2s\", name = \"x\""),
            "total = \"2s\" , name = \"x\""
        );
        assert_eq!(read_ok("__deferred, \"2s\""), "__deferred , total = \"2s\"");
        assert_eq!(read_ok("total = \"2s\""), "total = \"2s\"");
        assert_eq!(
            read_ok("__deferred, total = \"2s\""),
            "__deferred , total = \"2s\""
        );
        assert_eq!(read_ok(""), "");
        // A value with a comma between `<` and `>` is put back as written.
        assert_eq!(
            read_ok("total = limit::<A, B>()"),
            "total = limit ::< A , B > ()"
        );
    }

    #[test]
    fn a_literal_anywhere_else_is_refused_and_left_out() {
        let (args, errors) = read("\"2s\", \"5s\"");
        assert_eq!(args, "total = \"2s\"");
        assert!(errors[0].contains("remove `\"5s\"`"), "{errors:?}");
        let (args, errors) = read("\"2s\", total = \"5s\"");
        assert_eq!(args, "total = \"2s\"");
        assert!(
            errors[0].starts_with("`total` is given twice"),
            "{errors:?}"
        );
        let (args, errors) = read("total = \"5s\", \"2s\"");
        assert_eq!(args, "total = \"5s\"");
        assert!(errors[0].contains("already gives"), "{errors:?}");
        // Alone but not first: read as the `total`, so that it is not also reported missing.
        let (args, errors) = read("name = \"x\", \"2s\"");
        assert_eq!(args, "name = \"x\" , total = \"2s\"");
        assert!(errors[0].contains("only when it comes first"), "{errors:?}");
    }
}
