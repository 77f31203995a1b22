//! The expansion: the fn keeps its signature; its body runs inside the site's breaker, through
//! one call that the breaker admits at its first poll (which, awaited where it is made, is the
//! fn's first poll). The rule and the timeout are the breaker's to apply, from the settings in
//! force when the call is admitted: the expansion is the same whatever the attribute's options
//! (they only configure the site's breaker). As `tests/expand/capacity_timeout.expanded.rs`
//! shows it:
//!
//! ```ignore
//! async fn charge(card: &Card) -> Result<Receipt, PayError> {
//!     {
//!         static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
//!             || "payments",
//!             |breaker| {
//!                 breaker
//!                     .capacity(0.75)
//!                     .timeout(::core::time::Duration::from_secs(60))
//!                     .half_open_timeout(::core::time::Duration::from_millis(1500))
//!             },
//!         );
//!         BREAKER.breaker()
//!     }
//!         .call_with(
//!             async move {
//!                 if false {
//!                     return ::resiliency::__private::body_returns::<
//!                         Result<Receipt, PayError>,
//!                     >();
//!                 }
//!                 /* the original body */
//!             },
//!             ::resiliency::__private::every_error,
//!             ::resiliency::__private::hint_reader!(
//!                 <Result<Receipt, PayError> as ::resiliency::__private::IsResult>::Err
//!             ),
//!         )
//!         .await
//! }
//! ```
//!
//! The dead `return` makes the compiler check the body against the fn's return type, with its
//! coercions, as without the attribute. With `count_if`, the predicate takes `every_error`'s
//! place. `hint_reader!` is a closure that reads each error's `RetryHint` when its type (named
//! here, where it is known) implements it, and reads none otherwise: no bound is asked of it.
//!
//! A blocking fn (not `async`) runs its body in a closure called at once, which keeps every
//! `return` and `?` of the body as they were:
//!
//! ```ignore
//! fn fetch(id: u64) -> Result<Row, DbError> {
//!     { /* the site, as above */ }
//!         .call_blocking_with(
//!             move || -> Result<Row, DbError> { /* the original body */ },
//!             ::resiliency::__private::every_error,
//!             /* the hint reader, as above */
//!         )
//! }
//! ```

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::{Expr, ItemFn};

use super::ast::Breaker;
use crate::func;

pub(crate) fn expand(attr: &Breaker, func: ItemFn) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        modifiers: _,
        sig,
        block: _,
    } = func.clone();
    let (attrs, inner) = func::split_attrs(attrs);
    let krate = crate::value::krate_path(attr.krate.as_ref());
    let (marker, name) = crate::value::site_name(attr.name.as_ref(), "breaker_site", &krate);
    let options = attr.builder_calls(&krate);
    let configure = crate::value::configure("breaker", &options);
    let site = match attr.key.as_ref().map(|key| &key.value) {
        None => quote! {
            #marker
            static BREAKER: #krate::__private::BreakerSite =
                #krate::__private::BreakerSite::new(#name, #configure);
            BREAKER.breaker()
        },
        Some(key) => {
            let lookup = lookup(key, &krate);
            quote! {
                #marker
                static BREAKER: #krate::__private::KeyedSite =
                    #krate::__private::KeyedSite::new(#name, #configure);
                #lookup
            }
        }
    };
    // The `call` token carries the return type's span, so that a return type the breaker cannot
    // refuse through is reported there.
    let ret_span = func::error_type_span(&func);
    let fallback = crate::driver::Attribute::fallback(attr);
    let refusals = fallback.as_ref().is_some_and(|f| f.refusals_only());
    let count_if = attr.count_if.as_ref().map(|counts| &counts.value);
    let hint = func::hint_reader(&func, refusals, &krate);
    let call = if func::is_blocking(&func) {
        // A blocking fn: its body in a closure, called at once through the breaker.
        let body = func::blocking_body(&func);
        let call = match count_if {
            None if refusals => quote_spanned!(ret_span=> call_blocking_with(
                #krate::__private::refusals_blocking(#body),
                #krate::__private::every_error,
                #hint,
            )),
            None => quote_spanned!(ret_span=> call_blocking_with(
                #body,
                #krate::__private::every_error,
                #hint,
            )),
            Some(counts) if refusals => {
                // The predicate is typed by the body first, then judges the body's own errors.
                let (body_ident, counts_ident) = hygienic();
                let call = quote_spanned!(ret_span=> call_blocking_with(
                    #krate::__private::refusals_blocking(#body_ident),
                    #krate::__private::on_error(#counts_ident),
                    #hint,
                ));
                quote! {
                    {
                        let #body_ident = #body;
                        let #counts_ident = #krate::__private::counts_for_blocking(&#body_ident, #counts);
                        { #site }.#call
                    }
                }
            }
            Some(counts) => {
                quote_spanned!(ret_span=> call_blocking_with(#body, #counts, #hint))
            }
        };
        match count_if {
            Some(_) if refusals => call,
            _ => quote!({ #site }.#call),
        }
    } else {
        async_call(&func, &site, count_if, refusals, &hint, ret_span, &krate)
    };
    let body = match &fallback {
        Some(fallback) => {
            crate::fallback::finish(fallback, &func, call, attr.name.as_ref(), &krate)
        }
        None => call,
    };
    quote! {
        #(#attrs)*
        #vis #sig {
            #(#inner)*
            #body
        }
    }
}

/// The names a fallback's call binds the body and the predicate to.
fn hygienic() -> (syn::Ident, syn::Ident) {
    (
        syn::Ident::new("body", Span::mixed_site()),
        syn::Ident::new("counts", Span::mixed_site()),
    )
}

/// The call of an `async fn`'s body through the site's breaker, awaited.
fn async_call(
    func: &ItemFn,
    site: &TokenStream,
    count_if: Option<&Expr>,
    refusals: bool,
    hint: &TokenStream,
    ret_span: Span,
    krate: &TokenStream,
) -> TokenStream {
    let body = func::async_body(func, krate);
    // The call's `Future` impl repeats the bounds of `call` and `call_if` (`E: FromRejected`, the
    // predicate taking `&E`); should one not hold, the error is reported once if `.await` is
    // spanned where rustc reports the call's bound: at the return type, or, for a predicate that
    // is not a closure, at the predicate (a path's last segment).
    let wait = match count_if {
        Some(Expr::Closure(_)) | None => quote_spanned!(ret_span=> .await),
        Some(counts) => {
            let (_, last) = first_last(counts);
            quote_spanned!(last=> .await)
        }
    };
    let call = match count_if {
        None if refusals => {
            quote_spanned!(ret_span=> call_with(
                #krate::__private::refusals(#body),
                #krate::__private::every_error,
                #hint,
            ))
        }
        None => quote_spanned!(ret_span=> call_with(#body, #krate::__private::every_error, #hint)),
        Some(counts) => {
            // Pin the body's output to the return type first, so that a predicate of the wrong
            // type is reported on the predicate rather than on the return type.
            let body = match func::return_type(func) {
                Some(ret) if !func::mentions_impl(quote::ToTokens::to_token_stream(ret)) => {
                    quote!(#krate::__private::returns::<#ret, _>(#body))
                }
                _ => body,
            };
            if refusals {
                // The predicate is typed by the body first (`counts_for`), then judges the
                // body's own errors (`on_error`).
                let (body_ident, counts_ident) = hygienic();
                let call = quote_spanned!(ret_span=> call_with(
                    #krate::__private::refusals(#body_ident),
                    #krate::__private::on_error(#counts_ident),
                    #hint,
                ));
                return quote! {
                    {
                        let #body_ident = #body;
                        let #counts_ident = #krate::__private::counts_for(&#body_ident, #counts);
                        { #site }.#call #wait
                    }
                };
            }
            quote_spanned!(ret_span=> call_with(#body, #counts, #hint))
        }
    };
    quote!({ #site }.#call #wait)
}

/// `::resiliency::__private::KeyedSite::breaker(&BREAKER, &key)`, spanned from the key's first
/// token to its last, so that an error about the key (it is not a `BreakerKey`) covers all of it:
/// `url.host_str()`, `shard % 8`, not only `url` or `shard`. A span is one token's, so the tokens
/// that open the call (the path's first segment, the `&`) take the first token's span and those
/// that close it (the method's name, the parentheses) the last's. The call is by path because
/// rustc labels a method call (`BREAKER.breaker(..)`) by its name alone.
fn lookup(key: &Expr, krate: &TokenStream) -> TokenStream {
    let tokens = key.to_token_stream();
    let (first, last) = first_last(key);
    let closing = |tokens| {
        let mut group = Group::new(Delimiter::Parenthesis, tokens);
        group.set_span(last);
        group
    };
    let key = match key {
        Expr::Path(_) | Expr::Field(_) | Expr::MethodCall(_) | Expr::Call(_) | Expr::Macro(_) => {
            quote_spanned!(first=> &#tokens)
        }
        _ => {
            let key = closing(tokens);
            quote_spanned!(first=> &#key)
        }
    };
    // The crate path's first segment, with its leading `::` if any.
    let mut head = true;
    let krate: TokenStream = krate
        .clone()
        .into_iter()
        .map(|mut token| {
            if head {
                head = matches!(token, proc_macro2::TokenTree::Punct(_));
                token.set_span(first);
            }
            token
        })
        .collect();
    let method = syn::Ident::new("breaker", last);
    let args = closing(quote!(&BREAKER, #key));
    quote!(#krate::__private::KeyedSite::#method #args)
}

/// The spans of an expression's first and last tokens.
fn first_last(expr: &Expr) -> (Span, Span) {
    let mut spans = expr.to_token_stream().into_iter().map(|token| token.span());
    let first = spans.next().unwrap_or_else(Span::call_site);
    (first, spans.last().unwrap_or(first))
}
