//! `#[too_busy(...)]`: parse the arguments, wrap the fn's body in a load-shedding guard.

use proc_macro2::TokenStream;
use syn::ItemFn;

use crate::driver::{self, Attribute, Errors, Given};
use crate::func::Returns;

pub(crate) mod ast;
mod expand;
mod valid;

#[cfg(test)]
pub(crate) use ast::TooBusy as Args;

pub(crate) fn too_busy(args: TokenStream, item: TokenStream) -> TokenStream {
    driver::run::<ast::TooBusy>(args, item)
}

impl Attribute for ast::TooBusy {
    const NAME: &'static str = "too_busy";
    const RETURNS: Returns = Returns::Refusable;
    type Checked = ();

    fn validate(&self, given: &Given, errors: &mut Errors) {
        valid::validate(self, given, errors);
    }

    fn check_fn(&self, func: &ItemFn, given: &Given, errors: &mut Errors) {
        if crate::func::is_blocking(func) {
            valid::blocking(func, given, errors);
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
