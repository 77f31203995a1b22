//! The fn's arguments, seen by attempts that run at once: `&self` and shared references are
//! copied into each attempt, owned values (`self`, `self: Arc<Self>` too) are cloned for each;
//! `&mut` (self or not) cannot be shared and is a compile error that names the argument.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;
use syn::{FnArg, Ident, ItemFn, Pat, PatIdent, Receiver, ReceiverKind, Signature, Token, Type};

use crate::driver::Errors;

/// A name an attempt needs its own copy of; a `mut` one is mutable in the copy, not in the
/// signature (each attempt changes its own copy).
pub(crate) struct Binding {
    pub(crate) ident: Ident,
    pub(crate) mutability: Option<Token![mut]>,
    /// For an owned `self`, which cannot be rebound: the receiver the copy is made from (the
    /// body's `self` is renamed to `ident`, see [`rename_self`]).
    pub(crate) receiver: Option<Token![self]>,
}

/// What the body's `self` becomes in an attempt when `self` is owned.
pub(crate) fn self_copy(span: Span) -> Ident {
    Ident::new("__resiliency_self", span)
}

/// The names an attempt needs its own copy of (every binding of a typed argument).
pub(crate) fn bindings(func: &ItemFn, errors: &mut Errors) -> Vec<Binding> {
    let mut out = Vec::new();
    for input in &func.sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                const MUT_SELF: &str = "`#[race_retry]` runs attempts at once, and `&mut self` cannot be lent to two of them; take `&self` (with interior mutability where state changes)";
                match &receiver.kind {
                    ReceiverKind::Reference(and, _, Some(mutability)) => {
                        errors.add(syn::Error::new_spanned(quote!(#and #mutability), MUT_SELF));
                    }
                    // `self: T`: `&Self` is shared like `&self`; `&mut Self` or `Pin<&mut Self>`
                    // cannot be; anything else (`Arc<Self>`, `Box<Self>`) is owned.
                    ReceiverKind::Typed(_, ty) => {
                        if mentions_mut_reference(quote::ToTokens::to_token_stream(ty)) {
                            errors.add(syn::Error::new_spanned(ty, MUT_SELF));
                        } else if !matches!(**ty, Type::Reference(_)) {
                            out.push(owned_self(receiver));
                        }
                    }
                    ReceiverKind::Value => out.push(owned_self(receiver)),
                    _ => {}
                }
            }
            FnArg::Typed(typed) => {
                if let Type::Reference(reference) = &*typed.ty {
                    if let Some(mutability) = &reference.mutability {
                        let name = quote::ToTokens::to_token_stream(&typed.pat).to_string();
                        let and = &reference.and_token;
                        errors.add(syn::Error::new_spanned(
                            quote!(#and #mutability),
                            format_args!(
                                "`#[race_retry]` runs attempts at once, and `{name}` (a `&mut` reference) cannot be lent to two of them; take `&` (with interior mutability where it changes) or an owned value that is `Clone`"
                            ),
                        ));
                        continue;
                    }
                }
                each_binding(&mut (*typed.pat).clone(), &mut |ident| {
                    let mutability = match ident.by_ref {
                        None => ident.mutability,
                        Some(_) => None,
                    };
                    out.push(Binding {
                        ident: ident.ident.clone(),
                        mutability,
                        receiver: None,
                    });
                });
            }
        }
    }
    out
}

/// An owned `self` (`self`, `mut self`, `self: Arc<Self>`): cloned for each attempt as
/// `__resiliency_self`.
fn owned_self(receiver: &Receiver) -> Binding {
    Binding {
        ident: self_copy(receiver.self_token.span),
        mutability: receiver.mutability,
        receiver: Some(receiver.self_token),
    }
}

/// Whether a type's tokens hold a `&mut` (`&mut Self`, `Pin<&mut Self>`).
fn mentions_mut_reference(tokens: TokenStream) -> bool {
    let mut after_and = false;
    tokens.into_iter().any(|token| {
        let found = match &token {
            TokenTree::Ident(ident) => after_and && ident == "mut",
            TokenTree::Group(group) => mentions_mut_reference(group.stream()),
            _ => false,
        };
        after_and = matches!(&token, TokenTree::Punct(p) if p.as_char() == '&');
        found
    })
}

/// The body with its `self` (the receiver, not `self::` paths, nor the `self` of an `impl` or
/// `trait` nested in the body) renamed to `to`: an attempt's own copy of an owned `self`, since
/// `self` cannot be rebound with `let`. Inside a macro's arguments, `{self}` and `{self:..}` in
/// string literals are renamed too (format strings capture names).
pub(crate) fn rename_self(tokens: TokenStream, to: &Ident) -> TokenStream {
    rename_in(tokens, to, false)
}

fn rename_in(tokens: TokenStream, to: &Ident, in_macro: bool) -> TokenStream {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    // Inside a nested `impl` or `trait` (until its body), `self` is not ours.
    let mut nested_item = false;
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if ident == "impl" || ident == "trait" => {
                nested_item = true;
                out.push(token.clone());
            }
            TokenTree::Ident(ident) if ident == "self" && !nested_item => {
                let path = matches!(
                    (tokens.get(i + 1), tokens.get(i + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':'
                );
                if path {
                    out.push(token.clone());
                } else {
                    out.push(TokenTree::Ident(Ident::new(&to.to_string(), ident.span())));
                }
            }
            TokenTree::Group(group)
                if group.delimiter() == proc_macro2::Delimiter::Brace && nested_item =>
            {
                nested_item = false;
                out.push(token.clone());
            }
            TokenTree::Group(group) if !nested_item => {
                // `name!(..)`: a macro's arguments, where format strings may capture `self`.
                let macro_args = in_macro
                    || (i >= 2
                        && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!')
                        && matches!(&tokens[i - 2], TokenTree::Ident(_)));
                let mut renamed = proc_macro2::Group::new(
                    group.delimiter(),
                    rename_in(group.stream(), to, macro_args),
                );
                renamed.set_span(group.span());
                out.push(TokenTree::Group(renamed));
            }
            TokenTree::Literal(literal) if in_macro && !nested_item => {
                out.push(TokenTree::Literal(rename_in_format(literal, to)));
            }
            _ => out.push(token.clone()),
        }
    }
    out.into_iter().collect()
}

/// A string literal with `{self}` / `{self:..}` (not `{{self}}`) renamed to `to`.
fn rename_in_format(literal: &proc_macro2::Literal, to: &Ident) -> proc_macro2::Literal {
    let text = literal.to_string();
    if !(text.starts_with('"') || text.starts_with('r')) || !text.contains("{self") {
        return literal.clone();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text.as_str();
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with("{{") {
            out.push_str("{{");
            rest = &rest[2..];
        } else if rest.starts_with("{self}") || rest.starts_with("{self:") {
            out.push('{');
            out.push_str(&to.to_string());
            rest = &rest[5..];
        } else {
            out.push('{');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    match out.parse::<proc_macro2::Literal>() {
        Ok(mut renamed) => {
            renamed.set_span(literal.span());
            renamed
        }
        Err(_) => literal.clone(),
    }
}

/// Drops `mut` from the arguments' bindings (and from `mut self`): the attempts' copies carry it
/// instead.
pub(crate) fn drop_mut(sig: &mut Signature) {
    for input in &mut sig.inputs {
        match input {
            FnArg::Typed(typed) => each_binding(&mut typed.pat, &mut |ident| {
                if ident.by_ref.is_none() {
                    ident.mutability = None;
                }
            }),
            FnArg::Receiver(receiver) if !matches!(receiver.kind, ReceiverKind::Reference(..)) => {
                receiver.mutability = None;
            }
            FnArg::Receiver(_) => {}
        }
    }
}

fn each_binding(pat: &mut Pat, f: &mut impl FnMut(&mut PatIdent)) {
    match pat {
        Pat::Ident(ident) => {
            f(ident);
            if let Some((_, sub)) = &mut ident.subpat {
                each_binding(sub, f);
            }
        }
        Pat::Tuple(tuple) => tuple.elems.iter_mut().for_each(|p| each_binding(p, f)),
        Pat::TupleStruct(tuple) => tuple.elems.iter_mut().for_each(|p| each_binding(p, f)),
        Pat::Struct(s) => s
            .fields
            .iter_mut()
            .for_each(|field| each_binding(&mut field.pat, f)),
        Pat::Slice(slice) => slice.elems.iter_mut().for_each(|p| each_binding(p, f)),
        Pat::Reference(reference) => each_binding(&mut reference.pat, f),
        Pat::Paren(paren) => each_binding(&mut paren.pat, f),
        Pat::Type(typed) => each_binding(&mut typed.pat, f),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renamed(body: &str) -> String {
        let to = Ident::new("copy", Span::call_site());
        rename_self(body.parse().unwrap(), &to).to_string()
    }

    #[test]
    fn the_receiver_is_renamed_and_nothing_else() {
        assert_eq!(
            renamed("self.a + Self::f(&self) + self::g()"),
            "copy . a + Self :: f (& copy) + self :: g ()"
        );
        // A nested impl's `self` is its own.
        assert_eq!(
            renamed("impl T for U { fn f(&self) -> u8 { self.0 } } self.x"),
            "impl T for U { fn f (& self) -> u8 { self . 0 } } copy . x"
        );
    }

    #[test]
    fn format_strings_in_macros_capture_the_copy() {
        assert_eq!(
            renamed(r#"format!("{self} {{self}} {self:?} {selfish} {}", self.x)"#),
            r#"format ! ("{copy} {{self}} {copy:?} {selfish} {}" , copy . x)"#
        );
        // Outside a macro a string is only text.
        assert_eq!(renamed(r#"let s = "{self}";"#), r#"let s = "{self}" ;"#);
    }
}
