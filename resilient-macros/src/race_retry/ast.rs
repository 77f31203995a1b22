//! The arguments of `#[race_retry(...)]`, each kept with its span, and the values only it takes:
//! `after` (a duration or a percentile), `budget` and `backoff` (a value or `"off"`), `retries`
//! and `backoff_factor` (with their bounds).

use proc_macro2::Span;
use syn::{Expr, Lit, LitStr};

use crate::driver::arguments;
use crate::value::{self, Count, Duration, Expression, Krate, Number, Str, Value};

arguments! {
    /// `#[race_retry(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct RaceRetry {
        retries: u32 = Retries,
        after: After = AfterValue,
        total: std::time::Duration = Duration,
        each: std::time::Duration = Duration,
        budget: Budget = BudgetValue,
        backoff: Backoff = BackoffValue,
        backoff_factor: f64 = Factor,
        backoff_max: std::time::Duration = Duration,
        retry_if: Expr = Expression("is_transient"),
        #[darling(rename = "crate")]
        krate: LitStr = Krate,
    }
}

/// The one word `budget` and `backoff` take besides their values.
pub(crate) const OFF: &str = "off";

/// The most extra attempts (the runtime's `MAX_RETRIES`).
const MAX_RETRIES: u32 = 16;

/// When the next attempt starts.
#[derive(Copy, Clone)]
pub(crate) enum After {
    Fixed(std::time::Duration),
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
    Base(std::time::Duration),
    Off,
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

const BUDGET: &str = "`budget` is the share of load extra attempts may add: above 0 and at most 1, such as `budget = 0.1` (10%, the default), or `budget = \"off\"` for no budget";

/// `budget = 0.1` (a share in (0, 1]) or `budget = "off"`.
pub(crate) struct BudgetValue;

impl Value for BudgetValue {
    type Out = Budget;

    fn expected(&self) -> String {
        Number("0.1").expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(Budget, Span)> {
        match value::literal(expr) {
            Some(Lit::Str(text)) if text.value() == OFF => Ok((Budget::Off, text.span())),
            Some(Lit::Str(text)) => Err(syn::Error::new(
                text.span(),
                format_args!("`budget = {:?}` is not a budget; {BUDGET}", text.value()),
            )),
            Some(Lit::Int(_) | Lit::Float(_)) => {
                let (share, span) = Number("0.1").parse(name, expr)?;
                if share > 0.0 && share <= 1.0 {
                    Ok((Budget::Share(share), span))
                } else {
                    Err(syn::Error::new(span, BUDGET))
                }
            }
            _ => Err(syn::Error::new_spanned(expr, BUDGET)),
        }
    }
}

const BACKOFF: &str = "write a duration such as \"10ms\" (the bound of the first wait after a failure; each next one grows by `backoff_factor`), or `backoff = \"off\"` to start the next attempt at once";

/// `backoff = "10ms"` (the first wait's bound, above zero) or `backoff = "off"`.
pub(crate) struct BackoffValue;

impl Value for BackoffValue {
    type Out = Backoff;

    fn expected(&self) -> String {
        Str("10ms").expected()
    }

    fn parse(&self, _name: &str, expr: &Expr) -> syn::Result<(Backoff, Span)> {
        let text = match value::literal(expr) {
            Some(Lit::Str(text)) => text,
            Some(Lit::Int(_) | Lit::Float(_)) => {
                return Err(syn::Error::new_spanned(
                    expr,
                    format_args!(
                        "`backoff` takes a duration string, not a number: {BACKOFF}; the growth is `backoff_factor = 2`"
                    ),
                ))
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    expr,
                    format_args!("`backoff`: {BACKOFF}"),
                ))
            }
        };
        let value = text.value();
        if value == OFF {
            return Ok((Backoff::Off, text.span()));
        }
        match value::parse_duration(&value) {
            Ok(base) if !base.is_zero() => Ok((Backoff::Base(base), text.span())),
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
}

/// `backoff_factor = 2`: finite and at least 1.
pub(crate) struct Factor;

impl Value for Factor {
    type Out = f64;

    fn expected(&self) -> String {
        Number("2").expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(f64, Span)> {
        let (factor, span) = Number("2").parse(name, expr)?;
        if factor >= 1.0 && factor.is_finite() {
            Ok((factor, span))
        } else {
            Err(syn::Error::new(
                span,
                "`backoff_factor` is how much each wait's bound grows over the one before: a number of at least 1, such as `backoff_factor = 2` (the default; 1 keeps every bound at `backoff`)",
            ))
        }
    }
}

/// `retries = 2`: from 1 to `MAX_RETRIES`.
pub(crate) struct Retries;

impl Value for Retries {
    type Out = u32;

    fn expected(&self) -> String {
        Count::<u32>::NEW.expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(u32, Span)> {
        let retries = Count::<u32>::NEW.parse(name, expr);
        let Expr::Lit(syn::ExprLit {
            lit: Lit::Int(int), ..
        }) = expr
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
}

/// `after = "150ms"` or a percentile of recent attempts' latency, `after = "p95"`.
pub(crate) struct AfterValue;

impl Value for AfterValue {
    type Out = After;

    fn expected(&self) -> String {
        Str("150ms").expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(After, Span)> {
        let (text, span) = Str("150ms").parse(name, expr).map_err(|_| {
            syn::Error::new_spanned(
                expr,
                "`after` takes a duration string such as \"150ms\" or a percentile such as \"p95\"",
            )
        })?;
        let value = text.value();
        let after = match parse_percentile(&value) {
            Some(Ok(q)) => After::Percentile(q),
            Some(Err(why)) => return Err(syn::Error::new(span, format_args!("`after`: {why}"))),
            None => match value::parse_duration(&value) {
                Ok(d) if !d.is_zero() => After::Fixed(d),
                Ok(_) => {
                    return Err(syn::Error::new(
                        span,
                        "`after` must be above zero (to start every attempt at once, race them with `futures::select_ok` instead); write a duration such as \"150ms\" or a percentile such as \"p95\"",
                    ))
                }
                Err(why) => {
                    return Err(syn::Error::new(
                        span,
                        format_args!(
                            "`after`: {why}; write a duration such as \"150ms\" or a percentile such as \"p95\""
                        ),
                    ))
                }
            },
        };
        Ok((after, span))
    }
}
