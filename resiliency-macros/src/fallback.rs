//! `fallback = path` and `fallback_on = "refusals" | "errors"`, which every attribute takes: what
//! the call returns instead when the policy refuses it (or, with `"errors"`, when it fails). The
//! fallback is called with the fn's arguments, `self` first, and the reason last; each argument is
//! copied before the call takes it (`&T` copied, owned values cloned).
//!
//! With `"refusals"` (the default), the body's errors are kept apart from the policy's refusal
//! (`__private::refusals`, a `Failure<E>` that is `From<Rejected>`), so that only a refusal reaches
//! the fallback, as a `Rejected`, and the fn's error type needs no `From<Rejected>`:
//!
//! ```ignore
//! async fn profile(&self, id: u64) -> Result<Profile, ApiError> {
//!     let copy_self = ::resiliency::__private::fallback_arg(&self);
//!     let copy_id = ::resiliency::__private::fallback_arg(&id);
//!     match { /* the site */ }.call(::resiliency::__private::refusals(async move { /* body */ })).await {
//!         Ok(value) => Ok(value),
//!         Err(::resiliency::__private::Failure::Error(error)) => Err(error),
//!         Err(::resiliency::__private::Failure::Refused(reason)) => {
//!             let reason = { /* the fallback's site */ }.taken(Cause::Refused, reason);
//!             ::resiliency::__private::output::<Result<Profile, ApiError>, _, _>(
//!                 Self::cached(copy_self, copy_id, reason),
//!             )
//!             .await
//!         }
//!     }
//! }
//! ```
//!
//! With `"errors"`, the call is the attribute's own, and every `Err` goes to the fallback.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned as _;
use syn::{Expr, ExprPath, FnArg, ItemFn, Lit, Pat, PatIdent, ReceiverKind, Type};

use crate::driver::{Errors, Given};
use crate::func;
use crate::value::{self, AtFirstUse, Spanned, Value};

/// What the fallback covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum On {
    /// The policy's refusals: the fallback gets the `Rejected`.
    #[default]
    Refusals,
    /// Every `Err`, refusals included: the fallback gets the fn's error.
    Errors,
}

impl AtFirstUse for ExprPath {}
impl AtFirstUse for On {}

const PATH: &str = "`fallback` takes the path of a fn called with the fn's arguments and the reason, such as `fallback = cached_user` or `fallback = Self::cached`";

/// `fallback = cached_user`, `fallback = Self::cached`: a path.
pub(crate) struct FallbackPath;

impl Value for FallbackPath {
    type Out = ExprPath;

    fn expected(&self) -> String {
        "the path of a fn, such as `cached_user` or `Self::cached`".to_owned()
    }

    fn parse(&self, _name: &str, expr: &Expr) -> syn::Result<(ExprPath, Span)> {
        match expr {
            Expr::Path(path) => Ok((path.clone(), path.span())),
            Expr::Group(group) => self.parse(_name, &group.expr),
            Expr::Lit(lit) => match &lit.lit {
                Lit::Str(text) => Err(syn::Error::new(
                    text.span(),
                    format_args!(
                        "{PATH}: write the path without quotes, `fallback = {}`",
                        text.value()
                    ),
                )),
                _ => Err(syn::Error::new_spanned(expr, PATH)),
            },
            Expr::Closure(_) => Err(syn::Error::new_spanned(
                expr,
                format_args!(
                    "{PATH}; a closure cannot be called with `self`: write a fn or a method"
                ),
            )),
            _ => Err(syn::Error::new_spanned(expr, PATH)),
        }
    }
}

const ON: &str = "`fallback_on` is `\"refusals\"` (the default: the policy refused the call; the fallback gets the `Rejected`) or `\"errors\"` (every `Err`, refusals included; the fallback gets the fn's error)";

/// `fallback_on = "refusals"` or `"errors"`.
pub(crate) struct FallbackOn;

impl Value for FallbackOn {
    type Out = On;

    fn expected(&self) -> String {
        "`\"refusals\"` or `\"errors\"`".to_owned()
    }

    fn parse(&self, _name: &str, expr: &Expr) -> syn::Result<(On, Span)> {
        match value::literal(expr) {
            Some(Lit::Str(text)) => match text.value().as_str() {
                "refusals" => Ok((On::Refusals, text.span())),
                "errors" => Ok((On::Errors, text.span())),
                other => Err(syn::Error::new(
                    text.span(),
                    format_args!("`fallback_on = {other:?}` is not a choice; {ON}"),
                )),
            },
            _ => Err(syn::Error::new_spanned(expr, ON)),
        }
    }
}

/// An attribute's fallback, as its arguments give it.
pub(crate) struct Fallback<'a> {
    pub(crate) path: &'a ExprPath,
    pub(crate) on: On,
    /// The attribute's name, as the fallback's reports name the policy.
    pub(crate) policy: &'static str,
}

impl Fallback<'_> {
    /// Whether the call keeps the body's errors apart from refusals (`"refusals"`).
    pub(crate) fn refusals_only(&self) -> bool {
        self.on == On::Refusals
    }
}

/// The checks of `fallback` and `fallback_on` across the arguments and on the fn: `fallback_on`
/// needs `fallback`; the fn's return type must be nameable and a `Result`; no argument may be
/// `&mut` (the call holds it until the fallback would need it).
pub(crate) fn check(
    path: Option<&Spanned<ExprPath>>,
    on: Option<&Spanned<On>>,
    given: &Given,
    func: &ItemFn,
    macro_name: &str,
    errors: &mut Errors,
) {
    if path.is_none() {
        if let Some(span) = given.span("fallback_on").filter(|_| on.is_some()) {
            errors.push(
                span,
                "`fallback_on` says what `fallback` covers, and there is no `fallback`; add `fallback = path`, or remove `fallback_on`",
            );
        }
        return;
    }
    let name = given
        .span("fallback")
        .unwrap_or_else(|| func.sig.ident.span());
    match func::return_type(func) {
        Some(ty) if func::mentions_impl(ty.to_token_stream()) || !func::could_be_result(ty) => {
            errors.push(
                name,
                format_args!(
                    "`fallback` stands in for the call, so `#[{macro_name}]` needs the fn to return a named `Result<T, E>`; `{}` is not one",
                    ty.to_token_stream()
                ),
            )
        }
        _ => {}
    }
    for input in &func.sig.inputs {
        let mutable = match input {
            FnArg::Receiver(receiver) => match &receiver.kind {
                ReceiverKind::Reference(_, _, Some(_)) => Some("self".to_owned()),
                ReceiverKind::Typed(_, ty) if is_mut_reference(ty) => Some("self".to_owned()),
                _ => None,
            },
            FnArg::Typed(typed) if is_mut_reference(&typed.ty) => {
                Some(typed.pat.to_token_stream().to_string())
            }
            FnArg::Typed(_) => None,
        };
        if let Some(argument) = mutable {
            errors.push(
                input.span(),
                format_args!(
                    "`fallback` is called with the fn's arguments after the call, and `{argument}` (a `&mut` reference) stays lent to the call until then; take `&` (with interior mutability where it changes), or leave out `fallback`"
                ),
            );
        }
    }
}

fn is_mut_reference(ty: &Type) -> bool {
    matches!(ty, Type::Reference(reference) if reference.mutability.is_some())
}

/// Gives every argument bound by a pattern (`Json(order): Json<Order>`, `(a, b): (u8, u8)`) a
/// name of its own, destructured at the top of the body, so that the fallback can be called with
/// the argument as the caller gave it.
pub(crate) fn name_arguments(func: &mut ItemFn) {
    let mut lets = Vec::new();
    for (i, input) in func.sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(typed) = input else { continue };
        if matches!(
            &*typed.pat,
            Pat::Ident(PatIdent {
                by_ref: None,
                subpat: None,
                ..
            })
        ) {
            continue;
        }
        let name = format_ident!(
            "__resiliency_arg{}",
            i,
            span = Span::mixed_site().located_at(typed.pat.span())
        );
        let pattern = std::mem::replace(
            &mut *typed.pat,
            Pat::Ident(PatIdent {
                attrs: Vec::new(),
                by_ref: None,
                mutability: None,
                ident: name.clone(),
                subpat: None,
            }),
        );
        lets.push(syn::parse_quote!(let #pattern = #name;));
    }
    if !lets.is_empty() {
        lets.append(&mut func.block.stmts);
        func.block.stmts = lets;
    }
}

/// The fallback's copies of the fn's arguments, made before the call: the statements that make
/// them, and their names in the order of the fn's arguments.
pub(crate) fn copies(func: &ItemFn, krate: &TokenStream) -> (Vec<TokenStream>, Vec<Ident>) {
    let mut lets = Vec::new();
    let mut names = Vec::new();
    for (i, input) in func.sig.inputs.iter().enumerate() {
        let (from, span) = match input {
            FnArg::Receiver(receiver) => (
                receiver.self_token.to_token_stream(),
                receiver.self_token.span,
            ),
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) => (ident.ident.to_token_stream(), ident.ident.span()),
                // `name_arguments` named every other pattern.
                other => (other.to_token_stream(), other.span()),
            },
        };
        let copy = format_ident!(
            "__resiliency_fallback{}",
            i,
            span = Span::mixed_site().located_at(span)
        );
        lets.push(quote_spanned!(span=> let #copy = #krate::__private::fallback_arg(&#from);));
        names.push(copy);
    }
    (lets, names)
}

/// The fn's body: the copies of its arguments, then `call` (an expression of the attribute's
/// call, awaited) matched so that a refusal (or, with `"errors"`, any `Err`) returns the
/// fallback's output instead.
pub(crate) fn finish(
    fallback: &Fallback<'_>,
    func: &ItemFn,
    call: TokenStream,
    name: Option<&Spanned<syn::LitStr>>,
    krate: &TokenStream,
) -> TokenStream {
    let (lets, copies) = copies(func, krate);
    let ret = func::return_type(func);
    let path = fallback.path;
    let span = path.span();
    let hygienic = |name: &str| Ident::new(name, Span::mixed_site());
    let (value, error, reason) = (hygienic("value"), hygienic("error"), hygienic("reason"));
    let (marker, site_name) = value::site_name(name, "fallback_site", krate);
    let policy = fallback.policy;
    let (refused, cause) = if fallback.refusals_only() {
        (
            quote!(#krate::__private::Failure::Refused(#reason)),
            quote!(#krate::__private::Cause::Refused),
        )
    } else {
        (quote!(#reason), quote!(#krate::__private::Cause::Error))
    };
    let passes_errors = fallback.refusals_only().then(|| {
        quote! {
            ::core::result::Result::Err(#krate::__private::Failure::Error(#error)) => {
                ::core::result::Result::Err(#error)
            }
        }
    });
    // The reason as the fallback's last argument, shown at the path: a reason of the wrong type
    // is reported there, not on the whole attribute.
    let reason_arg = Ident::new("reason", Span::mixed_site().located_at(span));
    let called = quote_spanned!(span=> #path(#(#copies,)* #reason_arg));
    // The crate's path at the fallback's path too, so that an error about the output is shown
    // there once, not also on the whole attribute.
    let krate_here: TokenStream = krate
        .clone()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect();
    let krate = &krate_here;
    let output = if func::is_blocking(func) {
        quote_spanned!(span=> #krate::__private::blocking_output::<#ret, _>(#called))
    } else {
        let wait = quote_spanned!(span=> .await);
        quote_spanned!(span=> #krate::__private::output::<#ret, _, _>(#called) #wait)
    };
    quote! {
        #(#lets)*
        match #call {
            ::core::result::Result::Ok(#value) => ::core::result::Result::Ok(#value),
            #passes_errors
            ::core::result::Result::Err(#refused) => {
                let #reason = {
                    #marker
                    static FALLBACK: #krate::__private::FallbackSite =
                        #krate::__private::FallbackSite::new(#policy, #site_name);
                    &FALLBACK
                }
                .taken(#cause, #reason);
                #output
            }
        }
    }
}
