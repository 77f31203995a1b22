//! `#[timeout(...)]`: parse the arguments, validate them, and bound the fn's body by a time
//! limit.

use proc_macro2::TokenStream;
use syn::ItemFn;

use crate::driver::{self, Attribute, Errors, Given};
use crate::func::Returns;

pub(crate) mod ast;
mod expand;
mod valid;

#[cfg(test)]
pub(crate) use ast::Timeout as Args;

pub(crate) fn timeout(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = ast::positional(args, &mut errors);
    driver::run_with::<ast::Timeout>(args, item, errors)
}

impl Attribute for ast::Timeout {
    const NAME: &'static str = "timeout";
    const RETURNS: Returns = Returns::Result;
    type Checked = ();

    fn validate(&self, given: &Given, errors: &mut Errors) {
        valid::validate(self, given, errors);
    }

    fn check_fn(&self, func: &ItemFn, _given: &Given, errors: &mut Errors) {
        if crate::func::is_blocking(func) {
            valid::blocking(func, errors);
        }
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
