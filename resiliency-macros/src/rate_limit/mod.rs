//! `#[rate_limit(...)]`: parse the arguments, validate them, and run the fn's body under a rate
//! limit.

use proc_macro2::TokenStream;
use syn::ItemFn;

use crate::driver::{self, Attribute, Errors, Given};
use crate::func::Returns;

pub(crate) mod ast;
mod expand;
mod valid;

#[cfg(test)]
pub(crate) use ast::RateLimit as Args;

pub(crate) fn rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = crate::positional::positional(args, "rate_limit", "rate", "rate", &mut errors);
    driver::run_with::<ast::RateLimit>(args, item, errors)
}

impl Attribute for ast::RateLimit {
    const NAME: &'static str = "rate_limit";
    const RETURNS: Returns = Returns::Result;
    type Checked = ();

    fn validate(&self, given: &Given, errors: &mut Errors) {
        valid::validate(self, given, errors);
    }

    fn fallback_args(
        &self,
    ) -> (
        Option<&crate::value::Spanned<syn::ExprPath>>,
        Option<&crate::value::Spanned<crate::fallback::On>>,
    ) {
        (self.fallback.as_ref(), self.fallback_on.as_ref())
    }

    fn expand(&self, (): (), func: ItemFn) -> TokenStream {
        expand::expand(self, func)
    }
}
