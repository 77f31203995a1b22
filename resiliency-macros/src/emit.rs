//! A setting's value as the expansion writes it: the argument of the builder method of the
//! setting's name.

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::value::duration_tokens;

/// A setting's value as the expansion writes it, for the builder method of its name: a literal,
/// or a path under `__private` for a word (`"off"`, `"auto"`, a percentile).
pub(crate) trait Emit {
    fn emit(&self, krate: &TokenStream) -> TokenStream;
}

impl Emit for u32 {
    fn emit(&self, _: &TokenStream) -> TokenStream {
        proc_macro2::Literal::u32_unsuffixed(*self).into_token_stream()
    }
}

impl Emit for usize {
    fn emit(&self, _: &TokenStream) -> TokenStream {
        proc_macro2::Literal::usize_unsuffixed(*self).into_token_stream()
    }
}

impl Emit for f64 {
    fn emit(&self, _: &TokenStream) -> TokenStream {
        proc_macro2::Literal::f64_unsuffixed(*self).into_token_stream()
    }
}

impl Emit for std::time::Duration {
    fn emit(&self, _: &TokenStream) -> TokenStream {
        duration_tokens(*self)
    }
}

impl Emit for resiliency_rules::After {
    fn emit(&self, krate: &TokenStream) -> TokenStream {
        match self {
            resiliency_rules::After::Fixed(d) => duration_tokens(*d),
            resiliency_rules::After::Percentile(q) => {
                let q = proc_macro2::Literal::f64_unsuffixed(*q);
                quote::quote!(#krate::__private::After::Percentile(#q))
            }
        }
    }
}

impl Emit for resiliency_rules::Budget {
    fn emit(&self, krate: &TokenStream) -> TokenStream {
        match self {
            resiliency_rules::Budget::Share(share) => share.emit(krate),
            resiliency_rules::Budget::Off => quote::quote!(#krate::__private::Budget::Off),
        }
    }
}

impl Emit for resiliency_rules::Backoff {
    fn emit(&self, krate: &TokenStream) -> TokenStream {
        match self {
            resiliency_rules::Backoff::Base(base) => duration_tokens(*base),
            resiliency_rules::Backoff::Off => quote::quote!(#krate::__private::Backoff::Off),
        }
    }
}

impl Emit for resiliency_rules::InFlight {
    fn emit(&self, krate: &TokenStream) -> TokenStream {
        match self {
            resiliency_rules::InFlight::Fixed(limit) => limit.emit(krate),
            resiliency_rules::InFlight::Auto => quote::quote!(#krate::__private::InFlight::Auto),
        }
    }
}

impl Emit for resiliency_rules::Rate {
    fn emit(&self, krate: &TokenStream) -> TokenStream {
        let count = proc_macro2::Literal::u32_unsuffixed(self.count);
        let per = duration_tokens(self.per);
        quote::quote!(#krate::__private::Rate::new(#count, #per))
    }
}
