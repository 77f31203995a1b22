//! The arguments of `#[race_retry(...)]`, each kept with its span, and the checks that relate them
//! (`after` and `each` below `total`, `backoff_max` at least `backoff`, no `backoff_*` with
//! `backoff = "off"`).

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::{Expr, Lit, LitStr};

use crate::args::{self, Errors, Spanned};

pub(crate) const ARGUMENTS: &[&str] = &[
    "retries",
    "after",
    "total",
    "each",
    "budget",
    "backoff",
    "backoff_factor",
    "backoff_max",
    "retry_if",
    "crate",
];

/// The one word `budget` and `backoff` take besides their values.
pub(crate) const OFF: &str = "off";

/// The most extra attempts (the runtime's `MAX_RETRIES`).
const MAX_RETRIES: u32 = 16;

/// When the next attempt starts.
#[derive(Copy, Clone)]
pub(crate) enum After {
    Fixed(Duration),
    /// A quantile in (0, 1): `"p95"` is 0.95.
    Percentile(f64),
}

/// The retry budget: a share in (0, 1], or none.
#[derive(Copy, Clone)]
pub(crate) enum Budget {
    Share(f64),
    Off,
}

/// The wait after a failure: exponential backoff from this bound, or none (at once).
#[derive(Copy, Clone)]
pub(crate) enum Backoff {
    Base(Duration),
    Off,
}

pub(crate) struct RaceRetry {
    pub(crate) retries: Option<Spanned<u32>>,
    pub(crate) after: Option<Spanned<After>>,
    pub(crate) total: Option<Spanned<Duration>>,
    pub(crate) each: Option<Spanned<Duration>>,
    pub(crate) budget: Option<Spanned<Budget>>,
    pub(crate) backoff: Option<Spanned<Backoff>>,
    pub(crate) backoff_factor: Option<Spanned<f64>>,
    pub(crate) backoff_max: Option<Spanned<Duration>>,
    pub(crate) retry_if: Option<Expr>,
    pub(crate) krate: Option<Spanned<LitStr>>,
}

/// `"p95"`, `"p99.9"`: a percentile strictly between 0 and 100, as a quantile.
fn parse_percentile(text: &str) -> Option<Result<f64, String>> {
    let digits = text.strip_prefix('p')?;
    let valid = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.matches('.').count() <= 1
        && !digits.starts_with('.')
        && !digits.ends_with('.');
    if !valid {
        return Some(Err(format!(
            "`{text}` is not a percentile; write \"p\" and a number, such as \"p95\" or \"p99.9\""
        )));
    }
    let value: f64 = digits.parse().ok()?;
    if value <= 0.0 || value >= 100.0 {
        return Some(Err(format!(
            "`{text}`: a percentile lies strictly between p0 and p100, such as \"p95\""
        )));
    }
    Some(Ok(value / 100.0))
}

impl RaceRetry {
    pub(crate) fn from_args(tokens: TokenStream, call_site: Span, errors: &mut Errors) -> Self {
        let mut out = RaceRetry {
            retries: None,
            after: None,
            total: None,
            each: None,
            budget: None,
            backoff: None,
            backoff_factor: None,
            backoff_max: None,
            retry_if: None,
            krate: None,
        };
        let args = args::parse(tokens, "race_retry", ARGUMENTS, errors);
        // A malformed `total` has its own error; "needs `total`" would only repeat it.
        let total_given = args.iter().any(|arg| arg.name == "total");
        for arg in args {
            let parsed = match arg.name.as_str() {
                "retries" => parse_retries(&arg).map(|v| out.retries = Some(v)),
                "after" => parse_after(&arg).map(|v| out.after = Some(v)),
                "total" => arg.duration().map(|v| out.total = Some(v)),
                "each" => arg.duration().map(|v| out.each = Some(v)),
                "budget" => parse_budget(&arg).map(|v| out.budget = Some(v)),
                "backoff" => parse_backoff(&arg).map(|v| out.backoff = Some(v)),
                "backoff_factor" => parse_factor(&arg).map(|v| out.backoff_factor = Some(v)),
                "backoff_max" => arg.duration().map(|v| out.backoff_max = Some(v)),
                "retry_if" => arg.expr("is_transient").map(|v| out.retry_if = Some(v)),
                "crate" => arg.krate().map(|v| out.krate = Some(v)),
                _ => unreachable!("args::parse keeps known names only"),
            };
            if let Err(error) = parsed {
                errors.add(error);
            }
        }
        out.validate(call_site, total_given, errors);
        out
    }

    fn validate(&self, call_site: Span, total_given: bool, errors: &mut Errors) {
        let Some(total) = &self.total else {
            if total_given {
                return;
            }
            errors.push(
                call_site,
                "`#[race_retry]` needs `total`: one deadline over every attempt, such as `#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]`",
            );
            return;
        };
        if let Some(Spanned {
            value: After::Fixed(after),
            span,
            ..
        }) = &self.after
        {
            if after >= &total.value {
                errors.push(
                    *span,
                    format_args!(
                        "`after` must be below `total` ({}): no attempt after the first could start before the deadline",
                        format_args!("{:?}", total.value)
                    ),
                );
            }
        }
        self.validate_backoff(errors);
        if let Some(each) = &self.each {
            if each.value >= total.value {
                errors.push(
                    each.span,
                    format_args!(
                        "`each` must be below `total` ({}), or it bounds nothing; leave it out to let one attempt use the whole deadline",
                        format_args!("{:?}", total.value)
                    ),
                );
            }
        }
    }
}

impl RaceRetry {
    /// `backoff_factor` and `backoff_max` need a backoff; `backoff_max` bounds no wait below
    /// `backoff`.
    fn validate_backoff(&self, errors: &mut Errors) {
        let base = match self.backoff.as_ref().map(|b| b.value) {
            Some(Backoff::Off) => {
                let given = [
                    (
                        "backoff_factor",
                        self.backoff_factor.as_ref().map(|f| f.name),
                    ),
                    ("backoff_max", self.backoff_max.as_ref().map(|m| m.name)),
                ];
                for (name, span) in given {
                    if let Some(span) = span {
                        errors.push(
                            span,
                            format_args!(
                                "`{name}` does nothing with `backoff = \"off\"` (the next attempt starts at once after a failure); remove one of them"
                            ),
                        );
                    }
                }
                return;
            }
            Some(Backoff::Base(base)) => base,
            None => return,
        };
        if let Some(max) = &self.backoff_max {
            if max.value < base {
                errors.push(
                    max.span,
                    format_args!(
                        "`backoff_max` ({:?}) is below `backoff` ({base:?}), the bound of the first wait: raise `backoff_max`, or lower `backoff`",
                        max.value
                    ),
                );
            }
        }
    }
}

/// The literal an argument's value is, if it is one.
fn literal(arg: &args::Arg) -> Option<&Lit> {
    match arg.value.as_ref()? {
        Expr::Lit(syn::ExprLit { lit, .. }) => Some(lit),
        Expr::Group(group) => match &*group.expr {
            Expr::Lit(syn::ExprLit { lit, .. }) => Some(lit),
            _ => None,
        },
        _ => None,
    }
}

fn spanned<T>(arg: &args::Arg, value: T, span: Span) -> Spanned<T> {
    Spanned {
        value,
        span,
        name: arg.name_span,
    }
}

const BUDGET: &str = "`budget` is the share of load extra attempts may add: above 0 and at most 1, such as `budget = 0.1` (10%, the default), or `budget = \"off\"` for no budget";

/// `budget = 0.1` (a share in (0, 1]) or `budget = "off"`.
fn parse_budget(arg: &args::Arg) -> syn::Result<Spanned<Budget>> {
    match (literal(arg), &arg.value) {
        (Some(Lit::Str(text)), _) if text.value() == OFF => {
            Ok(spanned(arg, Budget::Off, text.span()))
        }
        (Some(Lit::Str(text)), _) => Err(syn::Error::new(
            text.span(),
            format_args!("`budget = {:?}` is not a budget; {BUDGET}", text.value()),
        )),
        // Without a value, `number` says what to write.
        (Some(Lit::Int(_) | Lit::Float(_)), _) | (_, None) => {
            let share = arg.number("0.1")?;
            if share.value > 0.0 && share.value <= 1.0 {
                Ok(spanned(arg, Budget::Share(share.value), share.span))
            } else {
                Err(syn::Error::new(share.span, BUDGET))
            }
        }
        (_, Some(value)) => Err(syn::Error::new_spanned(value, BUDGET)),
    }
}

const BACKOFF: &str = "write a duration such as \"10ms\" (the bound of the first wait after a failure; each next one grows by `backoff_factor`), or `backoff = \"off\"` to start the next attempt at once";

/// `backoff = "10ms"` (the first wait's bound, above zero) or `backoff = "off"`.
fn parse_backoff(arg: &args::Arg) -> syn::Result<Spanned<Backoff>> {
    let text = match (literal(arg), &arg.value) {
        (Some(Lit::Str(text)), _) => text.clone(),
        (Some(Lit::Int(_) | Lit::Float(_)), Some(value)) => {
            return Err(syn::Error::new_spanned(
                value,
                format_args!(
                    "`backoff` takes a duration string, not a number: {BACKOFF}; the growth is `backoff_factor = 2`"
                ),
            ))
        }
        (_, Some(value)) => {
            return Err(syn::Error::new_spanned(
                value,
                format_args!("`backoff`: {BACKOFF}"),
            ))
        }
        // Without a value, `string` says what to write.
        (_, None) => arg.string("10ms")?.value,
    };
    let value = text.value();
    if value == OFF {
        return Ok(spanned(arg, Backoff::Off, text.span()));
    }
    match args::parse_duration(&value) {
        Ok(base) if !base.is_zero() => Ok(spanned(arg, Backoff::Base(base), text.span())),
        Ok(_) => Err(syn::Error::new(
            text.span(),
            "`backoff` must be above zero; to start the next attempt at once after a failure, write `backoff = \"off\"`",
        )),
        Err(_) if !value.contains(|c: char| c.is_ascii_digit()) => Err(syn::Error::new(
            text.span(),
            format_args!("`backoff = {value:?}` is not a backoff; {BACKOFF}"),
        )),
        Err(why) => Err(syn::Error::new(
            text.span(),
            format_args!("`backoff`: {why}; {BACKOFF}"),
        )),
    }
}

/// `backoff_factor = 2`: finite and at least 1.
fn parse_factor(arg: &args::Arg) -> syn::Result<Spanned<f64>> {
    let factor = arg.number("2")?;
    if factor.value >= 1.0 && factor.value.is_finite() {
        Ok(factor)
    } else {
        Err(syn::Error::new(
            factor.span,
            "`backoff_factor` is how much each wait's bound grows over the one before: a number of at least 1, such as `backoff_factor = 2` (the default; 1 keeps every bound at `backoff`)",
        ))
    }
}

/// `retries = 2`: from 1 to `MAX_RETRIES`.
fn parse_retries(arg: &args::Arg) -> syn::Result<Spanned<u32>> {
    let retries = arg.count::<u32>();
    let Some(Expr::Lit(syn::ExprLit {
        lit: Lit::Int(int), ..
    })) = &arg.value
    else {
        return retries;
    };
    let why = match int.base10_parse::<u128>() {
        Ok(0) => "with none, bound the call with `tokio::time::timeout` instead",
        Ok(n) if n > u128::from(MAX_RETRIES) => {
            "each one multiplies the load an outage puts on the callee"
        }
        _ => return retries,
    };
    Err(syn::Error::new(
        int.span(),
        format_args!(
            "`retries` is the number of extra attempts on top of the first, from 1 to {MAX_RETRIES}, such as `retries = 2`; {why}"
        ),
    ))
}

fn parse_after(arg: &args::Arg) -> syn::Result<Spanned<After>> {
    let text = arg.string("150ms").map_err(|error| match &arg.value {
        Some(value) => syn::Error::new_spanned(
            value,
            "`after` takes a duration string such as \"150ms\" or a percentile such as \"p95\"",
        ),
        None => error,
    })?;
    let value = text.value.value();
    let after = match parse_percentile(&value) {
        Some(Ok(q)) => After::Percentile(q),
        Some(Err(why)) => return Err(syn::Error::new(text.span, format_args!("`after`: {why}"))),
        None => match args::parse_duration(&value) {
            Ok(d) if !d.is_zero() => After::Fixed(d),
            Ok(_) => {
                return Err(syn::Error::new(
                    text.span,
                    "`after` must be above zero (to start every attempt at once, race them with `futures::select_ok` instead); write a duration such as \"150ms\" or a percentile such as \"p95\"",
                ))
            }
            Err(why) => {
                return Err(syn::Error::new(
                    text.span,
                    format_args!(
                        "`after`: {why}; write a duration such as \"150ms\" or a percentile such as \"p95\""
                    ),
                ))
            }
        },
    };
    Ok(Spanned {
        value: after,
        span: text.span,
        name: text.name,
    })
}
