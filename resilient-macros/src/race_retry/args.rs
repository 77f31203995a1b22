//! The fn's arguments, seen by attempts that run at once: `&self` and shared references are
//! copied into each attempt, owned values are cloned for each; `&mut` (self or not) and `self` by
//! value cannot be shared and are compile errors that name the argument.

use quote::quote;
use syn::{FnArg, Ident, ItemFn, Pat, PatIdent, Signature, Token, Type};

use crate::args::Errors;

/// A name an attempt needs its own copy of; a `mut` one is mutable in the copy, not in the
/// signature (each attempt changes its own copy).
pub(crate) struct Binding {
    pub(crate) ident: Ident,
    pub(crate) mutability: Option<Token![mut]>,
}

/// The names an attempt needs its own copy of (every binding of a typed argument).
pub(crate) fn bindings(func: &ItemFn, errors: &mut Errors) -> Vec<Binding> {
    let mut out = Vec::new();
    for input in &func.sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                if receiver.reference.is_none() {
                    errors.push(
                        receiver.self_token.span,
                        "`#[race_retry]` runs attempts at once, and each would need its own `self`; take `&self` (an `Arc<Self>` receiver can become `&self` too)",
                    );
                } else if let (Some((and, _)), Some(mutability)) =
                    (&receiver.reference, &receiver.mutability)
                {
                    errors.add(syn::Error::new_spanned(
                        quote!(#and #mutability),
                        "`#[race_retry]` runs attempts at once, and `&mut self` cannot be lent to two of them; take `&self` (with interior mutability where state changes)",
                    ));
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
                    });
                });
            }
        }
    }
    out
}

/// Drops `mut` from the arguments' bindings: the attempts' copies carry it instead.
pub(crate) fn drop_mut(sig: &mut Signature) {
    for input in &mut sig.inputs {
        if let FnArg::Typed(typed) = input {
            each_binding(&mut typed.pat, &mut |ident| {
                if ident.by_ref.is_none() {
                    ident.mutability = None;
                }
            });
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
