//! The arguments of `#[race_retry(...)]`, each kept with its span, and the values only it takes:
//! `after` (a duration or a percentile), `budget` and `backoff` (a value or `"off"`), `retries`
//! and `backoff_factor` (with their bounds). Each of these may also be an expression (`OrExpr`):
//! a `Duration` for `after` (a fixed delay), an `f64` for `budget`, a `Duration` for `backoff`.

use proc_macro2::Span;
use syn::{Expr, Lit, LitStr};

pub(crate) use resiliency_rules::{After, Backoff, Budget};

use crate::value::{self, Expression, Number, Str, Value};

resiliency_rules::race_retry_settings!(crate::driver::arguments! {
    /// `#[race_retry(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct RaceRetry {
        name: LitStr = Str("payments"),
        retry_if: Expr = Expression("is_transient"),
        attempt: syn::Ident = crate::race_retry::ast::AttemptBinding,
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::RaceRetryOptions;
});

const ATTEMPT: &str = "`attempt` names the attempt number the body can use (0 for the first attempt, 1 for the first retry), such as `attempt = n`";

/// `attempt = n`: the name the body sees the attempt number by.
pub(crate) struct AttemptBinding;

impl Value for AttemptBinding {
    type Out = syn::Ident;

    fn expected(&self) -> String {
        "a name such as `n`".to_owned()
    }

    fn parse(&self, _name: &str, expr: &Expr) -> syn::Result<(syn::Ident, Span)> {
        match expr {
            Expr::Path(path) if path.qself.is_none() => match path.path.get_ident() {
                Some(ident) if ident != "self" => Ok((ident.clone(), ident.span())),
                _ => Err(syn::Error::new_spanned(path, ATTEMPT)),
            },
            Expr::Group(group) => self.parse(_name, &group.expr),
            Expr::Lit(lit) => match &lit.lit {
                Lit::Str(text) => Err(syn::Error::new(
                    text.span(),
                    format_args!(
                        "{ATTEMPT}: write the name without quotes, `attempt = {}`",
                        text.value()
                    ),
                )),
                _ => Err(syn::Error::new_spanned(expr, ATTEMPT)),
            },
            Expr::Infer(_) => Err(syn::Error::new_spanned(
                expr,
                format_args!("{ATTEMPT}; to leave it unused, leave out `attempt`"),
            )),
            _ => Err(syn::Error::new_spanned(expr, ATTEMPT)),
        }
    }
}

impl value::AtFirstUse for syn::Ident {}

/// The one word `budget` and `backoff` take besides their values.
pub(crate) const OFF: &str = "off";

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

/// What `budget` takes, its default as the example.
fn budget_expected() -> String {
    let example = match resiliency_rules::RaceRetryOptions::default().budget() {
        Budget::Share(default) => format!("such as `budget = {default}` (the default), "),
        Budget::Off => String::new(),
    };
    format!("`budget` is the share of load extra attempts may add: above 0 and at most 1, {example}or `budget = \"off\"` for no budget")
}

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
                format_args!(
                    "`budget = {:?}` is not a budget; {}",
                    text.value(),
                    budget_expected()
                ),
            )),
            Some(Lit::Int(_) | Lit::Float(_)) => {
                let (share, span) = Number("0.1").parse(name, expr)?;
                Ok((Budget::Share(share), span))
            }
            _ => Err(syn::Error::new_spanned(expr, budget_expected())),
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
            Ok(base) => Ok((Backoff::Base(base), text.span())),
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
                Ok(d) => After::Fixed(d),
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
