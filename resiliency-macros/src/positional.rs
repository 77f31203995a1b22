//! An attribute's main setting written first, without its name (`#[timeout("2s")]`,
//! `#[rate_limit("100/s")]`), read as the setting it is.

use proc_macro2::{Ident, Literal, TokenStream, TokenTree};
use quote::quote;

use crate::driver::Errors;

/// An attribute's main setting written first without its name: `#[timeout("2s", ...)]` read as
/// `#[timeout(total = "2s", ...)]`, `#[rate_limit("100/s")]` as `#[rate_limit(rate = "100/s")]`.
/// A literal first, with no name, is `setting` (its name spanned at the literal). A literal
/// elsewhere, a second one, or one beside `setting = ...` is refused in `errors`, at the token to
/// remove or move, and left out (or read as `setting` if there is no other), so that the driver
/// does not also report a malformed list or a missing `setting`. Anything else is left as
/// written, for the driver to read or refuse. `what` is what the literal is ("a duration").
pub(crate) fn positional(
    args: TokenStream,
    attribute: &str,
    setting: &str,
    what: &str,
    errors: &mut Errors,
) -> TokenStream {
    let (deferred, args) = crate::func::take_deferred(args);
    let arguments = split(args);
    let named_total = arguments.iter().position(|a| is_named(a, setting));
    let mut total: Option<(usize, Literal)> = None;
    let mut kept: Vec<TokenStream> = Vec::new();
    for (at, argument) in arguments.into_iter().enumerate() {
        if let Some(literal) = lone_literal(&argument) {
            match (&total, named_total) {
                (Some((_, first)), _) => errors.push(
                    literal.span(),
                    format_args!(
                        "`#[{attribute}]` takes one {what} without a name, the `{setting}`, and `{first}` is it; remove `{literal}`"
                    ),
                ),
                (None, Some(_)) if at != 0 => errors.push(
                    literal.span(),
                    format_args!(
                        "`{literal}` without a name would be the `{setting}`, which `{setting} = ...` already gives; remove it"
                    ),
                ),
                (None, _) => {
                    if at != 0 {
                        errors.push(
                            literal.span(),
                            format_args!(
                                "a {what} without a name is the `{setting}` only when it comes first: write `#[{attribute}({literal}, ...)]`, or `{setting} = {literal}`"
                            ),
                        );
                    }
                    let name = Ident::new(setting, literal.span());
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
                    .expect("a named setting");
                errors.push(
                    name.span(),
                    format_args!(
                        "`{setting}` is given twice: `{first}`, written first without a name, is the `{setting}`; keep one of them"
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

/// Whether an argument is `setting = ...`.
fn is_named(argument: &TokenStream, setting: &str) -> bool {
    let mut tokens = argument.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next()),
        (Some(TokenTree::Ident(name)), Some(TokenTree::Punct(eq)))
            if name == setting && eq.as_char() == '='
    )
}
