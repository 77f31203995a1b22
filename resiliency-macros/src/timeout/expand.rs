//! The expansion: the fn keeps its signature; its body runs under the site's time limit,
//! through one call awaited where it is made:
//!
//! ```ignore
//! async fn lookup(id: u64) -> Result<Item, AppError> {
//!     {
//!         fn timeout_site() {}
//!         static TIMEOUT: ::resiliency::__private::TimeoutSite = ::resiliency::__private::TimeoutSite::new(
//!             || ::resiliency::__private::name_of(timeout_site),
//!             |timeout| timeout.total(::core::time::Duration::from_secs(2)),
//!         );
//!         TIMEOUT.timeout()
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
//! With `name = "catalog"`, the site is `TimeoutSite::new(|| "catalog", ..)`, with no marker fn.
//! The time limit is set up on the first call, by `Timeout::builder` and the settings as its
//! calls; a `total` written as an expression (`total = LIMIT`) is passed as written, checked by
//! the builder then.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ItemFn;

use super::ast::Timeout;
use crate::func;

pub(crate) fn expand(attr: &Timeout, func: ItemFn) -> TokenStream {
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
    let configure = crate::value::configure("timeout", &options);
    let (marker, name) = crate::value::site_name(attr.name.as_ref(), "timeout_site", &krate);
    let site = quote! {
        {
            #marker
            static TIMEOUT: #krate::__private::TimeoutSite =
                #krate::__private::TimeoutSite::new(#name, #configure);
            TIMEOUT.timeout()
        }
    };
    let fallback = crate::driver::Attribute::fallback(attr);
    let refusals = fallback.as_ref().is_some_and(|f| f.refusals_only());
    let mut body = func::async_body(&func, &krate);
    if refusals {
        body = quote!(#krate::__private::refusals(#body));
    }
    // `call`'s bound names `E: From<Rejected>`: spanned at the return type, an error type
    // without it is reported there.
    let ret_span = func::error_type_span(&func);
    let call = quote_spanned!(ret_span=> call(#body).await);
    let call = quote!(#site.#call);
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
