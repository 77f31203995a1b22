//! The expansion: the fn keeps its signature; its body runs inside the site's breaker. A closed
//! breaker admits the call as it is made, and the body runs in a future with nothing else to
//! keep (with `timeout`, a timer started at its first wait); in every other state the call asks
//! at its first poll. As `tests/expand/capacity_timeout.expanded.rs` shows it:
//!
//! ```ignore
//! async fn charge(card: &Card) -> Result<Receipt, PayError> {
//!     match (
//!         {
//!             static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
//!                 || "payments",
//!                 |breaker| breaker.capacity(0.75).timeout(::core::time::Duration::from_secs(60)),
//!             );
//!             BREAKER.breaker()
//!         }
//!         .admit_closed_timed(),
//!         async move {
//!             if false {
//!                 return ::resiliency::__private::body_returns::<Result<Receipt, PayError>>();
//!             }
//!             /* the original body */
//!         },
//!     ) {
//!         (::core::result::Result::Ok(admitted), body) => admitted.call_timed(body).await,
//!         (::core::result::Result::Err(site), body) => site.call_timed(body).await,
//!     }
//! }
//! ```
//!
//! The pair is `admit_closed` or `admit_closed_rate` with `call`, or, with `timeout`,
//! `admit_closed_timed` or `admit_closed_timed_rate` with `call_timed`. The dead `return` makes
//! the compiler check the body against the fn's
//! return type, with its coercions, as without the attribute. With `count_if`, the site's
//! `call_if(body, predicate)` (or `call_if_timed`) is awaited instead, with no closed path.
//!
//! A blocking fn (not `async`) runs its body in a closure called at once, which keeps every
//! `return` and `?` of the body as they were:
//!
//! ```ignore
//! fn fetch(id: u64) -> Result<Row, DbError> {
//!     { /* the site, as above */ }
//!         .call_blocking(move || -> Result<Row, DbError> { /* the original body */ })
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
    if func::is_blocking(&func) {
        // A blocking fn: its body in a closure, called at once through the breaker.
        let body = func::blocking_body(&func);
        let call = match attr.count_if.as_ref().map(|counts| &counts.value) {
            None => quote_spanned!(ret_span=> call_blocking(#body)),
            Some(counts) => quote_spanned!(ret_span=> call_blocking_if(#body, #counts)),
        };
        return quote! {
            #(#attrs)*
            #vis #sig {
                #(#inner)*
                { #site }.#call
            }
        };
    }
    // A timer lives inside the call's future only where the attribute configures a timeout.
    let timed = attr.timeout.is_some() || attr.half_open_timeout.is_some();
    let body = func::async_body(&func, &krate);
    let count_if = attr.count_if.as_ref().map(|counts| &counts.value);
    if count_if.is_none() {
        // A closed breaker with no timeout in force admits the call as it is made (its first
        // poll), and the body runs in a future of its own, with no stage or timer to keep; any
        // other state asks at the first poll, as every other call does. The body is written
        // once, before the two arms.
        let body_ident = proc_macro2::Ident::new("body", Span::mixed_site());
        let admitted = proc_macro2::Ident::new("admitted", Span::mixed_site());
        let site_ident = proc_macro2::Ident::new("site", Span::mixed_site());
        // Spanned as `call`, whose bound it repeats: rustc reports the error once.
        let wait = quote_spanned!(ret_span=> .await);
        // The rule the attribute configures decides which admission the site tries: one whose
        // success records nothing, or the rate rule's, which records it. Either falls back to
        // `call` when the rule in force is the other (changed by a setting at run time). A site
        // with a timeout keeps a timer in either arm, started at the body's first wait.
        let (admit, call) = match (attr.failure_rate.is_some(), timed) {
            (false, false) => ("admit_closed", "call"),
            (true, false) => ("admit_closed_rate", "call"),
            (false, true) => ("admit_closed_timed", "call_timed"),
            (true, true) => ("admit_closed_timed_rate", "call_timed"),
        };
        let admit = proc_macro2::Ident::new(admit, Span::call_site());
        // Both calls carry the return type's span, where their bound is reported.
        let call = proc_macro2::Ident::new(call, ret_span);
        let closed_call = call.clone();
        let call = quote_spanned!(ret_span=> #call(#body_ident));
        return quote! {
            #(#attrs)*
            #vis #sig {
                #(#inner)*
                match ({ #site }.#admit(), #body) {
                    (::core::result::Result::Ok(#admitted), #body_ident) => #admitted.#closed_call(#body_ident) #wait,
                    (::core::result::Result::Err(#site_ident), #body_ident) => #site_ident.#call #wait,
                }
            }
        };
    }
    let call = match (count_if, timed) {
        (None, false) => quote_spanned!(ret_span=> call(#body)),
        (None, true) => quote_spanned!(ret_span=> call_timed(#body)),
        (Some(counts), timed) => {
            // Pin the body's output to the return type first, so that a predicate of the wrong
            // type is reported on the predicate rather than on the return type.
            let body = match func::return_type(&func) {
                Some(ret) if !func::mentions_impl(quote::ToTokens::to_token_stream(ret)) => {
                    quote!(#krate::__private::returns::<#ret, _>(#body))
                }
                _ => body,
            };
            let method = if timed {
                quote_spanned!(ret_span=> call_if_timed)
            } else {
                quote_spanned!(ret_span=> call_if)
            };
            quote_spanned!(ret_span=> #method(#body, #counts))
        }
    };
    // The call's `Future` impl needs the predicate to take `&E` too; should it not, the error is
    // reported once if `.await` is spanned where rustc reports the `call_if` bound: on a closure's
    // mismatch, at the return type; else at the predicate (a path's last segment).
    let wait = match count_if {
        Some(Expr::Closure(_)) => quote_spanned!(ret_span=> .await),
        Some(counts) => {
            let (_, last) = first_last(counts);
            quote_spanned!(last=> .await)
        }
        None => quote_spanned!(ret_span=> .await),
    };
    quote! {
        #(#attrs)*
        #vis #sig {
            #(#inner)*
            { #site }.#call #wait
        }
    }
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
