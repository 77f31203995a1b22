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
                    "`{}` needs a value: write `{} = ...` with {expected}",
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
        const EXPECTED: &str =
            "a duration string such as \"450ms\", \"1.5s\", \"1m30s\" or \"250us\"";
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

/// The units of a duration, largest first, with their length in ns.
const UNITS: &[(&str, u64)] = &[
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("ns", 1),
];

/// Parses a duration: one or more parts, each a number and a unit (`h`, `m`, `s`, `ms`, `us` or
/// `µs`, `ns`), such as "450ms", "1.5s", "2m", "250us" or "1m30s". Spaces may separate a number
/// from its unit and a part from the next ("2m 30s"). In a compound duration the units go from
/// largest to smallest, each once, and only the last part may have a fraction ("1m30.5s").
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let mut rest = text;
    let mut nanos: u128 = 0;
    // The previous part's unit (its length in ns), and whether its number had a fraction.
    let mut previous: Option<(u64, bool)> = None;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() {
            return Err(match previous {
                None => format!("`{text}` does not start with a number"),
                Some(_) => format!("`{text}`: `{rest}` is not a number and a unit"),
            });
        }
        let after = after.trim_start();
        let unit_len = after
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(match (previous, after.is_empty()) {
                (None, true) => format!("`{text}` has no unit"),
                (Some(_), true) => format!("`{text}`: `{number}` has no unit"),
                (_, false) => {
                    format!("`{after}` is not a unit (the units are ns, us, ms, s, m, h)")
                }
            });
        }
        let Some(&(_, unit_nanos)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "`{unit}` is not a unit (the units are ns, us, ms, s, m, h)"
            ));
        };
        if let Some((previous, fraction)) = previous {
            // `us` and `µs`, of one length, are one unit.
            if unit_nanos >= previous {
                return Err(format!(
                    "`{text}`: the units of a compound duration go from largest to smallest, each once"
                ));
            }
            if fraction {
                return Err(format!(
                    "`{text}`: only the last part of a compound duration may have a fraction, such as \"1m30.5s\""
                ));
            }
        }
        let amount: f64 = number
            .parse()
            .map_err(|_| format!("`{number}` is not a number"))?;
        let part = (amount * unit_nanos as f64).round();
        if part >= u64::MAX as f64 {
            return Err(format!("`{text}` is too long"));
        }
        if part == 0.0 && amount != 0.0 {
            return Err(format!("`{number}{unit}` is below one nanosecond"));
        }
        nanos += part as u128;
        if nanos > u128::from(u64::MAX) {
            return Err(format!("`{text}` is too long"));
        }
        previous = Some((unit_nanos, number.contains('.')));
        rest = after.trim_start();
    }
    if previous.is_none() {
        return Err("an empty string is not a duration".to_owned());
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
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        for (text, expected) in [
            ("450ms", ms(450)),
            ("1.5s", ms(1500)),
            ("2m", s(120)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("10ns", Duration::from_nanos(10)),
            ("1h", s(3600)),
            ("0s", Duration::ZERO),
            (".5s", ms(500)),
            ("450 ms", ms(450)),
            (" 2m ", s(120)),
            // Compound: units from largest to smallest, each once.
            ("1m30s", s(90)),
            ("1h30m", s(5400)),
            ("2m 30s", s(150)),
            ("1h2m3s4ms5us6ns", s(3723) + Duration::from_nanos(4_005_006)),
            ("1m30.5s", ms(90_500)),
            ("1s500ms", ms(1500)),
            ("1m0s", s(60)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn refused_durations() {
        for (text, why) in [
            ("450", "`450` has no unit"),
            ("", "an empty string is not a duration"),
            ("ms", "`ms` does not start with a number"),
            ("fast", "`fast` does not start with a number"),
            ("1.2.3s", "`1.2.3` is not a number"),
            ("5 years", "`years` is not a unit (the units are ns, us, ms, s, m, h)"),
            ("10 parsecs", "`parsecs` is not a unit (the units are ns, us, ms, s, m, h)"),
            ("5!", "`!` is not a unit (the units are ns, us, ms, s, m, h)"),
            ("0.1ns", "`0.1ns` is below one nanosecond"),
            ("1s0.1ns", "`0.1ns` is below one nanosecond"),
            ("6000000h", "`6000000h` is too long"),
            ("500000h500000h", "`500000h500000h`: the units of a compound duration go from largest to smallest, each once"),
            ("30s1m", "`30s1m`: the units of a compound duration go from largest to smallest, each once"),
            ("1s1s", "`1s1s`: the units of a compound duration go from largest to smallest, each once"),
            ("1us1µs", "`1us1µs`: the units of a compound duration go from largest to smallest, each once"),
            ("1.5m30s", "`1.5m30s`: only the last part of a compound duration may have a fraction, such as \"1m30.5s\""),
            ("1m30", "`1m30`: `30` has no unit"),
            ("1m, 30s", "`1m, 30s`: `, 30s` is not a number and a unit"),
            ("1m-30s", "`1m-30s`: `-30s` is not a number and a unit"),
        ] {
            assert_eq!(parse_duration(text), Err(why.to_owned()), "{text}");
        }
        // The sum of parts that each fit may not.
        assert_eq!(
            parse_duration("5124095h59m"),
            Err("`5124095h59m` is too long".to_owned())
        );
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
