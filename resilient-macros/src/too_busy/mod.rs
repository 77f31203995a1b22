//! `#[too_busy(...)]`: parse the arguments, wrap the fn's body in a load-shedding guard.

use proc_macro2::TokenStream;

use crate::args::Errors;
use crate::func;

mod ast;
mod expand;

pub(crate) fn too_busy(args: TokenStream, item: TokenStream) -> TokenStream {
    let (deferred, args) = func::take_deferred(args);
    let mut errors = Errors::default();
    let attr = ast::TooBusy::from_args(args.clone(), &mut errors);
    let func = func::parse(
        item.clone(),
        "too_busy",
        func::Returns::Refusable,
        &mut errors,
    );
    let krate = crate::args::krate_path(attr.krate.as_ref());
    func::finish(
        errors,
        func,
        item,
        ("too_busy", deferred, &args, &krate),
        |func| expand::expand(&attr, func),
    )
}
