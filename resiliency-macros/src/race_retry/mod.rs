//! `#[race_retry(...)]`: parse the arguments, validate them, check the fn's arguments can be
//! shared by attempts running at once, and race attempts of its body.

use proc_macro2::TokenStream;
use syn::ItemFn;

use crate::driver::{self, Attribute, Errors, Given};
use crate::func::Returns;

pub(crate) mod ast;
mod bindings;
mod expand;
mod valid;

#[cfg(test)]
pub(crate) use ast::RaceRetry as Args;

pub(crate) fn race_retry(args: TokenStream, item: TokenStream) -> TokenStream {
    driver::run::<ast::RaceRetry>(args, item)
}

impl Attribute for ast::RaceRetry {
    const NAME: &'static str = "race_retry";
    const RETURNS: Returns = Returns::Result;
    /// The names each attempt needs its own copy of.
    type Checked = Vec<bindings::Binding>;

    fn validate(&self, given: &Given, errors: &mut Errors) {
        valid::validate(self, given, errors);
    }

    fn check_fn(
        &self,
        func: &ItemFn,
        _given: &Given,
        errors: &mut Errors,
    ) -> Vec<bindings::Binding> {
        if crate::func::is_blocking(func) {
            valid::blocking(func, errors);
            return Vec::new();
        }
        if let Some(attempt) = &self.attempt {
            let name = attempt.value.to_string();
            if crate::func::argument_names(func).contains(&name) {
                errors.push(
                    attempt.span,
                    format_args!(
                        "`attempt = {name}` would hide the argument `{name}` in the body; name the attempt number otherwise, such as `attempt = n`"
                    ),
                );
            }
        }
        bindings::bindings(func, errors)
    }

    fn fallback_args(
        &self,
    ) -> (
        Option<&crate::value::Spanned<syn::ExprPath>>,
        Option<&crate::value::Spanned<crate::fallback::On>>,
    ) {
        (self.fallback.as_ref(), self.fallback_on.as_ref())
    }

    fn expand(&self, bindings: Vec<bindings::Binding>, func: ItemFn) -> TokenStream {
        expand::expand(self, &bindings, func)
    }
}
