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
    match (errors.finish(), func) {
        (Ok(()), Some(func)) => {
            let krate = crate::args::krate_path(attr.krate.as_ref());
            match deferred {
                false => func::defer(&func, "too_busy", &args, &krate),
                true => None,
            }
            .unwrap_or_else(|| expand::expand(&attr, func))
        }
        // Emit the item unchanged next to the errors (see `breaker`).
        (Err(error), _) => {
            let mut out = error.to_compile_error();
            out.extend(item);
            out
        }
        (Ok(()), None) => item,
    }
}
