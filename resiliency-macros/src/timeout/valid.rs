//! The rules of `#[timeout]`'s arguments: `resiliency_rules::timeout`, the same that
//! `Timeout::builder` checks (`total` required, above zero), each error pointing at the argument
//! to change.

use resiliency_rules::TimeoutOptions;

use super::ast::Timeout;
use crate::driver::{report, Errors, Given};

/// Every rule `#[timeout]`'s arguments break.
pub(crate) fn validate(args: &Timeout, given: &Given, errors: &mut Errors) {
    let written = given.written(args);
    let name = args.name.as_ref().map(|name| name.value.value());
    let mut options = TimeoutOptions {
        name: name.as_deref(),
        written: &written,
        ..TimeoutOptions::default()
    };
    args.fill(&mut options);
    report(resiliency_rules::timeout(&options), args, given, errors);
}

/// `#[timeout]` on a blocking fn, refused at its `fn` token. A rule about the fn, not about the
/// options: the builders never see a fn, so it is not one of `resiliency_rules`.
pub(crate) fn blocking(func: &syn::ItemFn, errors: &mut Errors) {
    errors.push(
        func.sig.fn_token.span,
        "`#[timeout]` needs an `async fn`: a blocking fn cannot be cut off while it runs; make the fn `async` (call blocking code with `tokio::task::spawn_blocking`, which a time limit stops waiting for)",
    );
}
