//! The rules of `#[race_retry]`'s arguments: `resiliency_rules::race_retry`, the same that
//! `RaceRetry::builder` checks (`total` required, `retries` within bounds, `after` and `each`
//! below `total`, the budget's share, the backoff's), each error pointing at the argument to
//! change.

use resiliency_rules::RaceRetryOptions;

use super::ast::RaceRetry;
use crate::driver::{report, Errors, Given};

/// Every rule `#[race_retry]`'s arguments break.
pub(crate) fn validate(args: &RaceRetry, given: &Given, errors: &mut Errors) {
    let written = given.written(args);
    let name = args.name.as_ref().map(|name| name.value.value());
    let mut options = RaceRetryOptions {
        name: name.as_deref(),
        written: &written,
        ..RaceRetryOptions::default()
    };
    args.fill(&mut options);
    report(resiliency_rules::race_retry(&options), args, given, errors);
}

/// `#[race_retry]` on a blocking fn, refused at its `fn` token. A rule about the fn, not about
/// the options: the builders never see a fn, so it is not one of `resiliency_rules`.
pub(crate) fn blocking(func: &syn::ItemFn, errors: &mut Errors) {
    errors.push(
        func.sig.fn_token.span,
        "`#[race_retry]` needs an `async fn`: it races attempts inside one task, which a blocking fn cannot do; make the fn `async` (call blocking code with `tokio::task::spawn_blocking`), or use `#[breaker]` alone",
    );
}
