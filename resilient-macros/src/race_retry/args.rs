//! The fn's arguments, seen by attempts that run at once: `&self` and shared references are
//! copied into each attempt, owned values are cloned for each; `&mut` (self or not) and `self` by
//! value cannot be shared and are compile errors that name the argument.

use syn::spanned::Spanned as _;
use syn::{FnArg, Ident, ItemFn, Pat, Type};

use crate::args::Errors;

/// The names an attempt needs its own copy of (every binding of a typed argument).
pub(crate) fn bindings(func: &ItemFn, errors: &mut Errors) -> Vec<Ident> {
    let mut out = Vec::new();
    for input in &func.sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                if receiver.reference.is_none() {
                    errors.push(
                        receiver.self_token.span,
                        "`#[race_retry]` runs attempts at once, and each would need its own `self`; take `&self` (an `Arc<Self>` receiver can become `&self` too)",
                    );
                } else if receiver.mutability.is_some() {
                    errors.push(
                        receiver.span(),
                        "`#[race_retry]` runs attempts at once, and `&mut self` cannot be lent to two of them; take `&self` (with interior mutability where state changes)",
                    );
                }
            }
            FnArg::Typed(typed) => {
                if let Type::Reference(reference) = &*typed.ty {
                    if reference.mutability.is_some() {
                        let name = quote::ToTokens::to_token_stream(&typed.pat).to_string();
                        errors.push(
                            typed.span(),
                            format_args!(
                                "`#[race_retry]` runs attempts at once, and `{name}` (a `&mut` reference) cannot be lent to two of them; take `&` (with interior mutability where it changes) or an owned value that is `Clone`"
                            ),
                        );
                        continue;
                    }
                }
                collect(&typed.pat, &mut out);
            }
        }
    }
    out
}

fn collect(pat: &Pat, out: &mut Vec<Ident>) {
    match pat {
        Pat::Ident(ident) => {
            out.push(ident.ident.clone());
            if let Some((_, sub)) = &ident.subpat {
                collect(sub, out);
            }
        }
        Pat::Tuple(tuple) => tuple.elems.iter().for_each(|p| collect(p, out)),
        Pat::TupleStruct(tuple) => tuple.elems.iter().for_each(|p| collect(p, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| collect(&f.pat, out)),
        Pat::Slice(slice) => slice.elems.iter().for_each(|p| collect(p, out)),
        Pat::Reference(reference) => collect(&reference.pat, out),
        Pat::Paren(paren) => collect(&paren.pat, out),
        Pat::Type(typed) => collect(&typed.pat, out),
        _ => {}
    }
}
