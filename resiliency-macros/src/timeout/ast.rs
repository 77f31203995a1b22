//! The arguments of `#[timeout(...)]`, each kept with its span: `total` (a duration, or an
//! expression of type `Duration`), which may also come first without its name
//! (`#[timeout("2s")]`, see [`positional`]).

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use syn::LitStr;

use crate::value::Str;

resiliency_rules::timeout_settings!(crate::driver::arguments! {
    /// `#[timeout(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct Timeout {
        name: LitStr = Str("payments"),
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::TimeoutOptions;
});

/// `#[timeout("2s", ...)]` read as `#[timeout(total = "2s", ...)]`: a literal first, with no
/// name, is the `total`. (Anything else is left as written, for the driver to read or refuse.)
pub(crate) fn positional(args: TokenStream) -> TokenStream {
    let (deferred, args) = crate::func::take_deferred(args);
    let named = match args.clone().into_iter().next() {
        Some(TokenTree::Literal(_)) => quote!(total = #args),
        _ => args,
    };
    if deferred {
        let marker = proc_macro2::Ident::new(crate::func::DEFERRED, proc_macro2::Span::call_site());
        quote!(#marker, #named)
    } else {
        named
    }
}

#[cfg(test)]
mod tests {
    use super::positional;

    fn read(args: &str) -> String {
        positional(args.parse().unwrap()).to_string()
    }

    #[test]
    fn a_literal_first_is_the_total() {
        assert_eq!(read("\"2s\""), "total = \"2s\"");
        assert_eq!(
            read("\"2s\", name = \"x\""),
            "total = \"2s\" , name = \"x\""
        );
        assert_eq!(read("__deferred, \"2s\""), "__deferred , total = \"2s\"");
        assert_eq!(read("total = \"2s\""), "total = \"2s\"");
        assert_eq!(
            read("__deferred, total = \"2s\""),
            "__deferred , total = \"2s\""
        );
        assert_eq!(read(""), "");
    }
}
