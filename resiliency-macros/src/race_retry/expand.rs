//! The expansion: the fn keeps its signature; attempts of its body race behind a static policy.
//!
//! ```ignore
//! async fn lookup(&self, id: u64, key: &str) -> Result<User, DbError> {
//!     {
//!         fn race_site() {}
//!         static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
//!             || ::resiliency::__private::name_of(race_site),
//!             |race| {
//!                 race.retries(2)
//!                     .after(::resiliency::__private::After::Fixed(::core::time::Duration::from_millis(150)))
//!                     .total(::core::time::Duration::from_millis(450))
//!             },
//!         );
//!         RACE.race()
//!     }
//!     .run_with(
//!         move || {
//!             let id = ::resiliency::__private::attempt_arg(&id);
//!             let key = ::resiliency::__private::attempt_arg(&key);
//!             async move {
//!                 if false {
//!                     return ::resiliency::__private::body_returns::<Result<User, DbError>>();
//!                 }
//!                 /* the original body */
//!             }
//!         },
//!         ::resiliency::__private::hint_reader!(
//!             <Result<User, DbError> as ::resiliency::__private::IsResult>::Err
//!         ),
//!     )
//!     .await
//! }
//! ```
//!
//! `hint_reader!` reads each error's `RetryHint` (see `#[breaker]`'s expansion). With
//! `attempt = n`, the closure is `numbered(move |n: u32| { .. })`.
//!
//! With `name = "search"`, the site is `RaceSite::new(|| "search", ..)`, with no marker fn.
//!
//! The policy is built on the first call, by `RaceRetry::builder` and the settings as its calls; a
//! setting written as an expression (`total = TOTAL`) is passed as written, checked by the builder
//! then (a non-literal `after` is a fixed delay: `After::Fixed(expr)`).
//!
//! With `retry_if = is_transient`, the attempt closure is bound first (`let attempt = move || ..;`)
//! and the call is `.run_if_with(attempt, |error| (is_transient)(error), hint)`; see `expand` for
//! why. A `mut`
//! argument loses its `mut` in the signature and keeps it in each attempt's copy.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned as _;
use syn::{Expr, ItemFn, Pat};

use super::ast::RaceRetry;
use super::bindings::{drop_mut, rename_self, Binding};
use crate::func;

pub(crate) fn expand(attr: &RaceRetry, bindings: &[Binding], mut func: ItemFn) -> TokenStream {
    let krate = crate::value::krate_path(attr.krate.as_ref());
    let ret_span = func::error_type_span(&func);
    // The fn as written (its `self` and `mut` arguments as they are), for the fallback's call.
    let original = func.clone();
    // An owned `self` cannot be rebound: the body uses each attempt's copy under another name.
    if let Some(binding) = bindings.iter().find(|b| b.receiver.is_some()) {
        let renamed = rename_self(func.block.to_token_stream(), &binding.ident);
        if let Ok(block) = syn::parse2(renamed) {
            func.block = Box::new(block);
        }
    }
    let body = func::async_body(&func, &krate);
    let ItemFn {
        attrs,
        vis,
        modifiers: _,
        mut sig,
        block: _,
    } = func;
    let (attrs, inner) = func::split_attrs(attrs);
    drop_mut(&mut sig);
    let options = attr.builder_calls(&krate);
    let configure = crate::value::configure("race", &options);
    let (marker, name) = crate::value::site_name(attr.name.as_ref(), "race_site", &krate);
    let copies = bindings.iter().map(
        |Binding {
             ident,
             mutability,
             receiver,
         }| {
            let from = match receiver {
                Some(receiver) => receiver.to_token_stream(),
                None => ident.to_token_stream(),
            };
            // A `_name` argument is still copied (the body may use it); clippy's pedantic
            // `used_underscore_binding` would blame the user's code for the copy.
            let allow = ident
                .to_string()
                .starts_with('_')
                .then(|| quote!(#[allow(clippy::used_underscore_binding)]));
            quote_spanned!(ident.span()=> #allow let #mutability #ident = #krate::__private::attempt_arg(&#from);)
        },
    );
    let attempt = match attr.attempt.as_ref().map(|binding| &binding.value) {
        None => quote! {
            move || {
                #(#copies)*
                #body
            }
        },
        // The attempt number as the body's `n`: a closure of it, wrapped so that the race calls
        // it with each attempt's number.
        Some(number) => quote! {
            #krate::__private::numbered(move |#number: u32| {
                #(#copies)*
                #body
            })
        },
    };
    let fallback = crate::driver::Attribute::fallback(attr);
    // With a fallback for refusals only, each attempt's errors are kept apart from the race's
    // refusal (`Failure<E>`), and `retry_if` judges the attempts' own errors.
    let refusals = fallback.as_ref().is_some_and(|f| f.refusals_only());
    // Each error's `RetryHint` (an upstream's `Retry-After`) delays the next attempt.
    let hint = func::hint_reader(&original, refusals, &krate);
    let (setup, run) = match attr.retry_if.as_ref().map(|predicate| &predicate.value) {
        Some(predicate) if refusals => {
            let name = Ident::new("attempt", Span::mixed_site());
            let retryable = Ident::new("retryable", Span::mixed_site());
            (
                quote! {
                    let #name = #attempt;
                    let #retryable = #krate::__private::retry_if_for(&#name, #predicate);
                },
                quote_spanned!(ret_span=> run_if_with(
                    #krate::__private::refusal_attempts(#name),
                    #krate::__private::on_error_fn(#retryable),
                    #hint,
                ).await),
            )
        }
        // The compiler must learn the error type from the body before it checks the predicate,
        // or `retry_if = f` with `f(&str)` makes it `str` and every bound fails at once. So the
        // attempt is bound first, and the predicate is called from a closure that `run_if` types;
        // a closure with an untyped parameter is passed as it is, to learn its type the same way.
        Some(predicate) => {
            let untyped = match predicate {
                Expr::Closure(closure) => closure.inputs.iter().any(|p| !matches!(p, Pat::Type(_))),
                _ => false,
            };
            let predicate = if untyped {
                predicate.to_token_stream()
            } else {
                let error = Ident::new("error", Span::mixed_site().located_at(predicate.span()));
                // Spanned in the expansion (not at the predicate), so that lints such as
                // `clippy::redundant_closure` see generated code, not the user's.
                quote_spanned!(Span::mixed_site()=> |#error| (#predicate)(#error))
            };
            // Hygienic, so that the predicate sees an argument named `attempt`, not this.
            let name = Ident::new("attempt", Span::mixed_site());
            (
                quote!(let #name = #attempt;),
                quote_spanned!(ret_span=> run_if_with(#name, #predicate, #hint).await),
            )
        }
        None if refusals => (
            quote!(),
            quote_spanned!(ret_span=> run_with(
                #krate::__private::refusal_attempts(#attempt),
                #hint,
            ).await),
        ),
        None => (
            quote!(),
            quote_spanned!(ret_span=> run_with(#attempt, #hint).await),
        ),
    };
    // `.await` is spanned like `run`: the race's `Future` impl needs `E: From<Rejected>` too, and
    // should that fail, the error points at `E`, not at the whole attribute.
    let call = quote! {
        #setup
        {
            #marker
            static RACE: #krate::__private::RaceSite = #krate::__private::RaceSite::new(
                #name,
                #configure,
            );
            RACE.race()
        }
        .#run
    };
    let body = match &fallback {
        Some(fallback) => crate::fallback::finish(
            fallback,
            &original,
            quote!({ #call }),
            attr.name.as_ref(),
            &krate,
        ),
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
