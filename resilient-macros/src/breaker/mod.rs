//! `#[breaker(...)]`: parse the arguments, validate them, wrap the fn's body in a breaker call.

use proc_macro2::TokenStream;

use crate::args::Errors;
use crate::func;

mod ast;
mod expand;
mod valid;

pub(crate) fn breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    let (deferred, args) = func::take_deferred(args);
    let mut errors = Errors::default();
    let attr = ast::Breaker::from_args(args.clone(), &mut errors);
    attr.validate(&mut errors);
    let func = func::parse(item.clone(), "breaker", func::Returns::Result, &mut errors);
    match (errors.finish(), func) {
        (Ok(()), Some(func)) => {
            let krate = crate::args::krate_path(attr.krate.as_ref());
            match deferred {
                false => func::defer(&func, "breaker", &args, &krate),
                true => None,
            }
            .unwrap_or_else(|| expand::expand(&attr, func))
        }
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
