//! The arguments of `#[breaker(...)]`, each kept with its span.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::{Expr, LitStr};

use crate::args::{self, Errors, Spanned};

pub(crate) const ARGUMENTS: &[&str] = &[
    "name",
    "key",
    "error_threshold",
    "error_window",
    "error_timeout",
    "success_threshold",
    "capacity",
    "timeout",
    "half_open_timeout",
    "failure_rate",
    "min_calls",
    "half_open_calls",
    "backoff",
    "max_error_timeout",
    "count_if",
    "idle_timeout",
    "max_keys",
    "crate",
];

#[derive(Default)]
pub(crate) struct Breaker {
    pub(crate) name: Option<Spanned<LitStr>>,
    pub(crate) key: Option<Expr>,
    pub(crate) error_threshold: Option<Spanned<u32>>,
    pub(crate) error_window: Option<Spanned<Duration>>,
    pub(crate) error_timeout: Option<Spanned<Duration>>,
    pub(crate) success_threshold: Option<Spanned<u32>>,
    pub(crate) capacity: Option<Spanned<f64>>,
    pub(crate) timeout: Option<Spanned<Duration>>,
    pub(crate) half_open_timeout: Option<Spanned<Duration>>,
    pub(crate) failure_rate: Option<Spanned<f64>>,
    pub(crate) min_calls: Option<Spanned<u32>>,
    pub(crate) half_open_calls: Option<Spanned<u32>>,
    pub(crate) backoff: Option<Spanned<f64>>,
    pub(crate) max_error_timeout: Option<Spanned<Duration>>,
    pub(crate) count_if: Option<Expr>,
    pub(crate) idle_timeout: Option<Spanned<Duration>>,
    pub(crate) max_keys: Option<Spanned<u64>>,
    pub(crate) krate: Option<Spanned<LitStr>>,
    /// Every argument written, even one whose value did not parse, with its name's span: checks
    /// across arguments look here, so that a malformed `timeout` is not also reported missing.
    pub(crate) given: Vec<(String, Span)>,
}

impl Breaker {
    pub(crate) fn from_args(tokens: TokenStream, errors: &mut Errors) -> Self {
        let mut out = Breaker::default();
        for arg in args::parse(tokens, "breaker", ARGUMENTS, errors) {
            out.given.push((arg.name.clone(), arg.name_span));
            let parsed = match arg.name.as_str() {
                "name" => arg.string("payments").map(|v| out.name = Some(v)),
                "key" => arg.expr("host").map(|v| out.key = Some(v)),
                "error_threshold" => arg.count().map(|v| out.error_threshold = Some(v)),
                "error_window" => arg.duration().map(|v| out.error_window = Some(v)),
                "error_timeout" => arg.duration().map(|v| out.error_timeout = Some(v)),
                "success_threshold" => arg.count().map(|v| out.success_threshold = Some(v)),
                "capacity" => arg.number("0.75").map(|v| out.capacity = Some(v)),
                "timeout" => arg.duration().map(|v| out.timeout = Some(v)),
                "half_open_timeout" => arg.duration().map(|v| out.half_open_timeout = Some(v)),
                "failure_rate" => arg.number("0.5").map(|v| out.failure_rate = Some(v)),
                "min_calls" => arg.count().map(|v| out.min_calls = Some(v)),
                "half_open_calls" => arg.count().map(|v| out.half_open_calls = Some(v)),
                "backoff" => arg.number("2.0").map(|v| out.backoff = Some(v)),
                "max_error_timeout" => arg.duration().map(|v| out.max_error_timeout = Some(v)),
                "count_if" => arg.expr("is_transient").map(|v| out.count_if = Some(v)),
                "idle_timeout" => arg.duration().map(|v| out.idle_timeout = Some(v)),
                "max_keys" => arg.count().map(|v| out.max_keys = Some(v)),
                "crate" => arg.krate().map(|v| out.krate = Some(v)),
                _ => unreachable!("args::parse keeps known names only"),
            };
            if let Err(error) = parsed {
                errors.add(error);
            }
        }
        out
    }

    /// The span of argument `name`'s name, when it was written.
    pub(crate) fn given(&self, name: &str) -> Option<Span> {
        self.given
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, span)| *span)
    }
}
