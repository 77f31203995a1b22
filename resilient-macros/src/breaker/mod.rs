//! `#[breaker(...)]`: parse the arguments, validate them, wrap the fn's body in a breaker call.

use proc_macro2::TokenStream;

use crate::args::Errors;
use crate::func;

mod ast;
mod expand;
mod valid;

pub(crate) fn breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let attr = ast::Breaker::from_args(args, &mut errors);
    attr.validate(&mut errors);
    let func = func::parse(item.clone(), "breaker", func::Returns::Result, &mut errors);
    match (errors.finish(), func) {
        (Ok(()), Some(func)) => expand::expand(&attr, func),
        // Emit the item unchanged next to the errors, so that one typo does not turn every use of
        // the function red.
        (Err(error), _) => {
            let mut out = error.to_compile_error();
            out.extend(item);
            out
        }
        (Ok(()), None) => item,
    }
}
