//! The expansion: the fn keeps its signature; attempts of its body race behind a static policy.
//!
//! ```ignore
//! async fn lookup(&self, id: u64, key: &str) -> Result<User, DbError> {
//!     {
//!         fn race_site() {}
//!         static RACE: ::resilient::__private::RaceRetry = ::resilient::__private::RaceRetry::lazy(
//!             || ::resilient::__private::name_of(race_site),
//!             2,
//!             ::resilient::__private::After::Fixed(::core::time::Duration::from_millis(150)),
//!             ::core::time::Duration::from_millis(450),
//!         );
//!         &RACE
//!     }
//!     .run(move || {
//!         let id = ::resilient::__private::attempt_arg(&id);
//!         let key = ::resilient::__private::attempt_arg(&key);
//!         ::resilient::__private::returns::<Result<User, DbError>, _>(async move { /* body */ })
//!     })
//!     .await
//! }
//! ```

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::{Ident, ItemFn};

use super::ast::{After, RaceRetry};
use crate::args::duration_tokens;
use crate::func;

pub(crate) fn expand(attr: &RaceRetry, bindings: &[Ident], func: ItemFn) -> TokenStream {
    let krate = crate::args::krate_path(attr.krate.as_ref());
    let ret = func::return_type(&func).cloned();
    let ret_span = func::error_type_span(&func);
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = func;
    let retries = Literal::u32_unsuffixed(attr.retries.as_ref().map_or(2, |r| r.value));
    let total = duration_tokens(
        attr.total
            .as_ref()
            .map_or_else(Default::default, |t| t.value),
    );
    let after = match attr.after.as_ref().map(|a| a.value) {
        Some(After::Fixed(d)) => {
            let d = duration_tokens(d);
            quote!(#krate::__private::After::Fixed(#d))
        }
        Some(After::Percentile(q)) => quote!(#krate::__private::After::Percentile(#q)),
        None => quote!(#krate::__private::After::Percentile(0.95)),
    };
    let mut options = Vec::new();
    if let Some(each) = &attr.each {
        let d = duration_tokens(each.value);
        options.push(quote!(.each(#d)));
    }
    if let Some(budget) = &attr.budget {
        let b = budget.value;
        options.push(quote!(.budget(#b)));
    }
    let copies = bindings.iter().map(|ident| {
        quote_spanned!(ident.span()=> let #ident = #krate::__private::attempt_arg(&#ident);)
    });
    let ret = ret
        .map(|r| r.into_token_stream())
        .unwrap_or_else(|| quote!(_));
    let attempt = quote! {
        move || {
            #(#copies)*
            #krate::__private::returns::<#ret, _>(async move #block)
        }
    };
    let run = match &attr.retry_if {
        Some(predicate) => quote_spanned!(ret_span=> run_if(#predicate, #attempt)),
        None => quote_spanned!(ret_span=> run(#attempt)),
    };
    quote! {
        #(#attrs)*
        #vis #sig {
            {
                fn race_site() {}
                static RACE: #krate::__private::RaceRetry = #krate::__private::RaceRetry::lazy(
                    || #krate::__private::name_of(race_site),
                    #retries,
                    #after,
                    #total,
                ) #(#options)*;
                &RACE
            }
            .#run
            .await
        }
    }
}
