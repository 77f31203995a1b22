//! `#[race_retry(...)]`: parse the arguments, check the fn's arguments can be shared by attempts
//! running at once, and race attempts of its body.

use proc_macro2::{Span, TokenStream};

use crate::args::Errors;
use crate::func;

mod args;
mod ast;
mod expand;

pub(crate) fn race_retry(tokens: TokenStream, item: TokenStream) -> TokenStream {
    let (deferred, tokens) = func::take_deferred(tokens);
    let mut errors = Errors::default();
    let attr = ast::RaceRetry::from_args(tokens.clone(), Span::call_site(), &mut errors);
    let func = func::parse(
        item.clone(),
        "race_retry",
        func::Returns::Result,
        &mut errors,
    );
    let bindings = func
        .as_ref()
        .map(|func| args::bindings(func, &mut errors))
        .unwrap_or_default();
    let krate = crate::args::krate_path(attr.krate.as_ref());
    func::finish(
        errors,
        func,
        item,
        ("race_retry", deferred, &tokens, &krate),
        |func| expand::expand(&attr, &bindings, func),
    )
}
