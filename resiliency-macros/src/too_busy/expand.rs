//! The expansion: the fn keeps its signature; its body runs behind a static guard.
//!
//! ```ignore
//! async fn handler(req: Request) -> Result<Response, AppError> {
//!     {
//!         fn too_busy_site() {}
//!         static TOO_BUSY: ::resiliency::__private::TooBusySite = ::resiliency::__private::TooBusySite::new(
//!             || ::resiliency::__private::name_of(too_busy_site),
//!             |guard| guard.max_in_flight(256),
//!         );
//!         TOO_BUSY.guard()
//!     }
//!     .call(async move { /* the original body */ })
//!     .await
//! }
//! ```
//!
//! With `name = "checkout"`, the site is `TooBusySite::new(|| "checkout", ..)`, with no marker fn.
//!
//! The guard is built on the first call, by `TooBusy::builder` and the settings as its calls
//! (`|guard| guard` with none); a setting written as an expression (`max_in_flight = LIMIT`) is
//! passed as written, checked by the builder then.
//!
//! The call is awaited where it is made, so the guard can answer at once: when it admits the call
//! holding nothing (the lag signal alone, the lag at most `max_lag`), the body is awaited as it
//! is; otherwise the call goes through `.call(..)` above, which asks at its first poll:
//!
//! ```ignore
//! match ({ /* the site, as above */ }.admit_free(), async move { /* the original body */ }) {
//!     (Ok(()), body) => body.await,
//!     (Err(site), body) => site.call(body).await,
//! }
//! ```
//!
//! A blocking fn (not `async`) calls `.call_blocking(move || -> Result<T, E> { /* the original
//! body */ })`, with no `.await`.
//!
//! A return type other than `Result<T, E>` (`impl IntoResponse`, `Response`) is refused through
//! `resiliency::too_busy::Refuse`: the call is `.respond(..)`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::{ItemFn, ReturnType, Type};

use super::ast::TooBusy;
use crate::func;

pub(crate) fn expand(attr: &TooBusy, func: ItemFn) -> TokenStream {
    let krate = crate::value::krate_path(attr.krate.as_ref());
    let ItemFn {
        attrs,
        vis,
        modifiers: _,
        sig,
        block,
    } = func.clone();
    let (attrs, inner) = func::split_attrs(attrs);
    let options = attr.builder_calls(&krate);
    let configure = crate::value::configure("guard", &options);
    let ret_span = func::error_type_span(&func);
    // An `impl IntoResponse` body is turned into a `Response` (the `axum` feature), through
    // which a refusal can be a 503.
    let body = match &sig.output {
        ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)) => quote! {
            async move { #krate::__private::into_response(async move #block.await) }
        },
        _ => func::async_body(&func, &krate),
    };
    let (marker, name) = crate::value::site_name(attr.name.as_ref(), "too_busy_site", &krate);
    let site = quote! {
        {
            #marker
            static TOO_BUSY: #krate::__private::TooBusySite =
                #krate::__private::TooBusySite::new(#name, #configure);
            TOO_BUSY.guard()
        }
    };
    let fallback = crate::driver::Attribute::fallback(attr);
    // With a fallback for refusals only, the body's errors are kept apart from the guard's
    // refusal (`Failure<E>`).
    let refusals = fallback.as_ref().is_some_and(|f| f.refusals_only());
    let with_fallback = |call: TokenStream| match &fallback {
        Some(fallback) => {
            crate::fallback::finish(fallback, &func, call, attr.name.as_ref(), &krate)
        }
        None => call,
    };
    if func::is_blocking(&func) {
        // A blocking fn (which returns a `Result`, checked in `valid`): its body in a closure,
        // called at once through the guard.
        let mut body = func::blocking_body(&func);
        if refusals {
            body = quote!(#krate::__private::refusals_blocking(#body));
        }
        let call = quote_spanned!(ret_span=> call_blocking(#body));
        let body = with_fallback(quote!(#site.#call));
        return quote! {
            #(#attrs)*
            #vis #sig {
                #(#inner)*
                #body
            }
        }
        .into_token_stream();
    }
    let body = if refusals {
        quote!(#krate::__private::refusals(#body))
    } else {
        body
    };
    // A call the guard admits now holding nothing (the lag alone, below `max_lag`) has nothing to
    // give back or record however it ends: its body runs as it is. Any other call asks at its
    // first poll. The body is written once, and goes to one arm or the other.
    let body_ident = proc_macro2::Ident::new("body", proc_macro2::Span::mixed_site());
    let site_ident = proc_macro2::Ident::new("site", proc_macro2::Span::mixed_site());
    // A `Result` is called with `call`, whose bound names `E: From<Rejected>` itself, so that an
    // error type without it gets the same message as under the other attributes; another type
    // with `respond`, bound on `Refuse`.
    let call = match func::return_type(&func) {
        Some(ty) if func::is_result(ty) || refusals => {
            quote_spanned!(ret_span=> call(#body_ident))
        }
        _ => quote_spanned!(ret_span=> respond(#body_ident)),
    };
    let body = with_fallback(quote! {
        match (#site.admit_free(), #body) {
            (::core::result::Result::Ok(()), #body_ident) => #body_ident.await,
            (::core::result::Result::Err(#site_ident), #body_ident) => #site_ident.#call.await,
        }
    });
    quote! {
        #(#attrs)*
        #vis #sig {
            #(#inner)*
            #body
        }
    }
    .into_token_stream()
}
