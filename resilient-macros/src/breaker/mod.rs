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
    let krate = crate::args::krate_path(attr.krate.as_ref());
    func::finish(
        errors,
        func,
        item,
        ("breaker", deferred, &args, &krate),
        |func| expand::expand(&attr, func),
    )
}
