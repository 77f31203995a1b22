//! Attribute arguments shared by every macro: `name = value` pairs parsed into spanned values, with
//! errors for unknown (with a suggestion), repeated and malformed arguments, all collected at once.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, Lit, Meta, Token};

/// A value with the span of the token that wrote it and of its argument's name.
#[derive(Clone, Debug)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    /// The value's tokens: errors about the value point here.
    pub(crate) span: Span,
    /// The argument's name: errors about the argument as a whole point here.
    pub(crate) name: Span,
}

/// Collects errors so that one run reports every problem.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        let error = syn::Error::new(span, message);
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn add(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// One `name = value` argument (or a bare `name`).
pub(crate) struct Arg {
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) value: Option<Expr>,
}

/// Splits the attribute's tokens into arguments, checking names against `known` and reporting
/// unknown and repeated ones. `macro_name` goes into the messages.
pub(crate) fn parse(
    tokens: TokenStream,
    macro_name: &str,
    known: &[&str],
    errors: &mut Errors,
) -> Vec<Arg> {
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(metas) => metas,
        Err(error) => {
            errors.push(
                error.span(),
                format_args!(
                    "{error}; `#[{macro_name}]` takes `name = value` arguments separated by commas"
                ),
            );
            return Vec::new();
        }
    };
    let mut args: Vec<Arg> = Vec::new();
    for meta in metas {
        let path = meta.path();
        let name = path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_else(|| path.to_token_stream().to_string().replace(' ', ""));
        let name_span = path.span();
        if !known.contains(&name.as_str()) {
            let hint = match suggest(&name, known) {
                Some(close) => format!("did you mean `{close}`? "),
                None => String::new(),
            };
            errors.push(
                name_span,
                format_args!(
                    "unknown argument `{name}` of `#[{macro_name}]`; {hint}the arguments are: {}",
                    known
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            continue;
        }
        if args.iter().any(|a| a.name == name) {
            errors.push(
                name_span,
                format_args!("`{name}` is given more than once; keep one"),
            );
            continue;
        }
        let value = match meta {
            Meta::NameValue(nv) => Some(nv.value),
            Meta::Path(_) => None,
            Meta::List(list) => {
                errors.push(
                    list.delimiter.span().join(),
                    format_args!("write `{name} = value`, not `{name}(...)`"),
                );
                continue;
            }
        };
        args.push(Arg {
            name,
            name_span,
            value,
        });
    }
    args
}

/// The closest known name, if it is close enough to be a typo.
fn suggest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

impl Arg {
    fn value(&self, expected: &str) -> syn::Result<&Expr> {
        self.value.as_ref().ok_or_else(|| {
            syn::Error::new(
                self.name_span,
                format_args!(
                    "`{}` needs a value: `{} = {expected}`",
                    self.name, self.name
                ),
            )
        })
    }

    fn spanned<T>(&self, value: T, expr: &Expr) -> Spanned<T> {
        Spanned {
            value,
            span: expr.span(),
            name: self.name_span,
        }
    }

    fn lit(&self, expected: &str) -> syn::Result<(&Lit, &Expr)> {
        let expr = self.value(expected)?;
        match expr {
            Expr::Lit(ExprLit { lit, .. }) => Ok((lit, expr)),
            Expr::Group(group) => match &*group.expr {
                Expr::Lit(ExprLit { lit, .. }) => Ok((lit, expr)),
                _ => Err(self.expected(expr, expected)),
            },
            _ => Err(self.expected(expr, expected)),
        }
    }

    fn expected(&self, expr: &Expr, expected: &str) -> syn::Error {
        syn::Error::new_spanned(expr, format_args!("`{}` takes {expected}", self.name))
    }

    /// A duration literal such as `"450ms"`, above zero.
    pub(crate) fn duration(&self) -> syn::Result<Spanned<Duration>> {
        const EXPECTED: &str = "a duration string such as \"450ms\", \"1.5s\", \"2m\" or \"250us\"";
        let (lit, expr) = self.lit(EXPECTED)?;
        let Lit::Str(text) = lit else {
            return Err(self.expected(expr, EXPECTED));
        };
        let duration = parse_duration(&text.value()).map_err(|why| {
            syn::Error::new(
                text.span(),
                format_args!("`{}`: {why}; write {EXPECTED}", self.name),
            )
        })?;
        if duration.is_zero() {
            return Err(syn::Error::new(
                text.span(),
                format_args!("`{}` must be above zero; write {EXPECTED}", self.name),
            ));
        }
        Ok(self.spanned(duration, expr))
    }

    /// An integer literal of at least 1 that fits `T`.
    pub(crate) fn count<T: Count>(&self) -> syn::Result<Spanned<T>> {
        let (lit, expr) = self.lit("a whole number such as `3`")?;
        let Lit::Int(int) = lit else {
            return Err(self.expected(expr, "a whole number such as `3`"));
        };
        let out_of_range = || {
            syn::Error::new(
                int.span(),
                format_args!(
                    "`{}` must be a whole number from 1 to {}, e.g. `{} = 3`",
                    self.name,
                    T::MAX,
                    self.name
                ),
            )
        };
        let value: u128 = int.base10_parse().map_err(|_| out_of_range())?;
        if value == 0 || value > T::MAX {
            return Err(out_of_range());
        }
        let value = T::try_from(value).map_err(|_| out_of_range())?;
        Ok(self.spanned(value, expr))
    }

    /// A number literal, integer or float.
    pub(crate) fn number(&self, example: &str) -> syn::Result<Spanned<f64>> {
        let expected = format!("a number such as `{example}`");
        let (lit, expr) = self.lit(&expected)?;
        let value = match lit {
            Lit::Float(f) => f.base10_parse::<f64>()?,
            Lit::Int(i) => i.base10_parse::<f64>()?,
            _ => return Err(self.expected(expr, &expected)),
        };
        Ok(self.spanned(value, expr))
    }

    /// A string literal.
    pub(crate) fn string(&self, example: &str) -> syn::Result<Spanned<syn::LitStr>> {
        let expected = format!("a string such as `\"{example}\"`");
        let (lit, expr) = self.lit(&expected)?;
        match lit {
            Lit::Str(s) => Ok(self.spanned(s.clone(), expr)),
            _ => Err(self.expected(expr, &expected)),
        }
    }

    /// `crate = "::path"`: a string holding a path.
    pub(crate) fn krate(&self) -> syn::Result<Spanned<syn::LitStr>> {
        let krate = self.string("::resilient")?;
        if let Err(error) = krate.value.parse::<syn::Path>() {
            return Err(syn::Error::new(
                krate.span,
                format_args!("`crate` must be a path such as \"::resilient\": {error}"),
            ));
        }
        Ok(krate)
    }

    /// Any expression.
    pub(crate) fn expr(&self, example: &str) -> syn::Result<Expr> {
        self.value(&format!("an expression such as `{example}`"))
            .cloned()
    }
}

/// The path generated code names the crate by: `crate = "..."`, or `::resilient`.
pub(crate) fn krate_path(krate: Option<&Spanned<syn::LitStr>>) -> TokenStream {
    match krate {
        Some(k) => k
            .value
            .parse::<syn::Path>()
            .map_or_else(|e| e.to_compile_error(), |p| p.into_token_stream()),
        None => quote::quote!(::resilient),
    }
}

/// An integer type an argument can hold.
pub(crate) trait Count: TryFrom<u128> {
    const MAX: u128;
}

impl Count for u32 {
    const MAX: u128 = u32::MAX as u128;
}

impl Count for u64 {
    const MAX: u128 = u64::MAX as u128;
}

/// Parses "450ms", "1.5s", "2m", "250us", "10ns", "1h" (also "µs").
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{text}` has no unit"))?;
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!("`{text}` does not start with a number"));
    }
    let nanos_per_unit: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(format!(
                "`{other}` is not a unit (the units are ns, us, ms, s, m, h)"
            ))
        }
    };
    let amount: f64 = number
        .parse()
        .map_err(|_| format!("`{number}` is not a number"))?;
    let nanos = (amount * nanos_per_unit).round();
    if nanos >= u64::MAX as f64 {
        return Err(format!("`{text}` is too long"));
    }
    if nanos == 0.0 && amount != 0.0 {
        return Err(format!("`{text}` is below one nanosecond"));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// `::core::time::Duration::from_xxx(n)` in the largest unit that states `d` exactly.
pub(crate) fn duration_tokens(d: Duration) -> TokenStream {
    let nanos = d.as_nanos() as u64;
    let (ctor, n) = if nanos % 1_000_000_000 == 0 {
        ("from_secs", nanos / 1_000_000_000)
    } else if nanos % 1_000_000 == 0 {
        ("from_millis", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        ("from_micros", nanos / 1_000)
    } else {
        ("from_nanos", nanos)
    };
    let ctor = proc_macro2::Ident::new(ctor, Span::call_site());
    let n = proc_macro2::Literal::u64_unsuffixed(n);
    quote::quote!(::core::time::Duration::#ctor(#n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("450ms"), Ok(Duration::from_millis(450)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("450").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("5 years").is_err());
        assert!(parse_duration("0.1ns").is_err());
    }

    #[test]
    fn suggestions() {
        let known = ["error_threshold", "error_timeout", "timeout"];
        assert_eq!(suggest("error_treshold", &known), Some("error_threshold"));
        assert_eq!(suggest("timout", &known), Some("timeout"));
        assert_eq!(suggest("colour", &known), None);
    }

    #[test]
    fn duration_units() {
        let t = |d| duration_tokens(d).to_string().replace(' ', "");
        assert_eq!(
            t(Duration::from_secs(2)),
            "::core::time::Duration::from_secs(2)"
        );
        assert_eq!(
            t(Duration::from_millis(1500)),
            "::core::time::Duration::from_millis(1500)"
        );
        assert_eq!(
            t(Duration::from_nanos(7)),
            "::core::time::Duration::from_nanos(7)"
        );
    }
}
