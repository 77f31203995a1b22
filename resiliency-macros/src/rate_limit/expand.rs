//! The expansion: the fn keeps its signature; its body runs under the site's rate limit,
//! through one call awaited where it is made (admitted at its first poll):
//!
//! ```ignore
//! async fn partner(id: u64) -> Result<Item, AppError> {
//!     {
//!         fn rate_limit_site() {}
//!         static RATE_LIMIT: ::resiliency::__private::RateLimitSite = ::resiliency::__private::RateLimitSite::new(
//!             || ::resiliency::__private::name_of(rate_limit_site),
//!             |limit| limit.rate(::resiliency::__private::Rate::new(100, ::core::time::Duration::from_secs(1))),
//!         );
//!         RATE_LIMIT.rate_limit()
//!     }
//!     .call(async move {
//!         if false {
//!             return ::resiliency::__private::body_returns::<Result<Item, AppError>>();
//!         }
//!         /* the original body */
//!     })
//!     .await
//! }
//! ```
//!
//! With `name = "partner-api"`, the site is `RateLimitSite::new(|| "partner-api", ..)`, with no
//! marker fn. The rate limit is set up on the first call, by `RateLimit::builder` and the
//! settings as its calls; a setting written as an expression (`rate = RATE`) is passed as written,
//! checked by the builder then. With `key = client`, the site is `RATE_LIMIT.rate_limit().keyed(&(client))`:
//! the key is hashed there, before the body takes the arguments. A blocking fn (not `async`) calls `.call_blocking(move || ->
//! Result<T, E> { /* the original body */ })`, with no `.await`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ItemFn;

use super::ast::RateLimit;
use crate::func;

pub(crate) fn expand(attr: &RateLimit, func: ItemFn) -> TokenStream {
    let krate = crate::value::krate_path(attr.krate.as_ref());
    let ItemFn {
        attrs,
        vis,
        modifiers: _,
        sig,
        block: _,
    } = func.clone();
    let (attrs, inner) = func::split_attrs(attrs);
    let options = attr.builder_calls(&krate);
    let configure = crate::value::configure("limit", &options);
    let (marker, name) = crate::value::site_name(attr.name.as_ref(), "rate_limit_site", &krate);
    // A key is hashed where the call is made, before the body takes the arguments.
    let keyed = attr.key.as_ref().map(|key| {
        let key = &key.value;
        quote!(.keyed(&(#key)))
    });
    let site = quote! {
        {
            #marker
            static RATE_LIMIT: #krate::__private::RateLimitSite =
                #krate::__private::RateLimitSite::new(#name, #configure);
            RATE_LIMIT.rate_limit()#keyed
        }
    };
    let fallback = crate::driver::Attribute::fallback(attr);
    let refusals = fallback.as_ref().is_some_and(|f| f.refusals_only());
    // `call`'s bound names `E: From<Rejected>`: spanned at the return type, an error type
    // without it is reported there.
    let ret_span = func::error_type_span(&func);
    let call = if func::is_blocking(&func) {
        let mut body = func::blocking_body(&func);
        if refusals {
            body = quote!(#krate::__private::refusals_blocking(#body));
        }
        let call = quote_spanned!(ret_span=> call_blocking(#body));
        quote!(#site.#call)
    } else {
        let mut body = func::async_body(&func, &krate);
        if refusals {
            body = quote!(#krate::__private::refusals(#body));
        }
        let call = quote_spanned!(ret_span=> call(#body).await);
        quote!(#site.#call)
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
