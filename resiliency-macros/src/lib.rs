//! The attributes of the `resiliency` crate. Depend on `resiliency`, which re-exports them with the
//! runtime they call into; the documentation lives there.
//!
//! Each attribute parses its arguments into a spanned model (`ast`, a darling `FromMeta` struct
//! over the values of `value`), validates it in its own pass (`valid`) and generates a short
//! expansion that calls `resiliency::__private` (`expand`); `driver` runs these steps for each.

#![warn(missing_docs, unreachable_pub)]

use proc_macro::TokenStream;

mod breaker;
mod driver;
mod emit;
mod fallback;
mod func;
mod positional;
mod race_retry;
mod rate_limit;
mod timeout;
mod too_busy;
mod value;

// The attributes' documentation is on their re-exports in `resiliency` (`src/attributes.rs`):
// rustdoc would append a doc comment written here to the facade's page.

#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    breaker::breaker(args.into(), item.into()).into()
}

#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn too_busy(args: TokenStream, item: TokenStream) -> TokenStream {
    too_busy::too_busy(args.into(), item.into()).into()
}

#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn timeout(args: TokenStream, item: TokenStream) -> TokenStream {
    timeout::timeout(args.into(), item.into()).into()
}

#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    rate_limit::rate_limit(args.into(), item.into()).into()
}

#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn race_retry(args: TokenStream, item: TokenStream) -> TokenStream {
    race_retry::race_retry(args.into(), item.into()).into()
}

#[cfg(test)]
mod rules_both_sides;
#[cfg(test)]
mod snapshots;
