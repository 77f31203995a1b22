//! The arguments of `#[too_busy(...)]`, each kept with its span. Every argument is checked on its
//! own (durations above zero, `max_in_flight` at least 1); none depends on another.

use std::time::Duration;

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::args::{self, Errors, Spanned};

pub(crate) const ARGUMENTS: &[&str] = &["max_lag", "max_in_flight", "max_latency", "crate"];

#[derive(Default)]
pub(crate) struct TooBusy {
    pub(crate) max_lag: Option<Spanned<Duration>>,
    pub(crate) max_in_flight: Option<Spanned<u32>>,
    pub(crate) max_latency: Option<Spanned<Duration>>,
    pub(crate) krate: Option<Spanned<LitStr>>,
}

impl TooBusy {
    pub(crate) fn from_args(tokens: TokenStream, errors: &mut Errors) -> Self {
        let mut out = TooBusy::default();
        for arg in args::parse(tokens, "too_busy", ARGUMENTS, errors) {
            let parsed = match arg.name.as_str() {
                "max_lag" => arg.duration().map(|v| out.max_lag = Some(v)),
                "max_in_flight" => arg.count().map(|v| out.max_in_flight = Some(v)),
                "max_latency" => arg.duration().map(|v| out.max_latency = Some(v)),
                "crate" => arg.krate().map(|v| out.krate = Some(v)),
                _ => unreachable!("args::parse keeps known names only"),
            };
            if let Err(error) = parsed {
                errors.add(error);
            }
        }
        out
    }
}
