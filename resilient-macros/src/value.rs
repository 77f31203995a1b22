//! The values attribute arguments take, each read from `name = value` by a [`Value`] into a
//! [`Spanned`] value: durations ("450ms", "1m30s"), whole numbers, numbers, strings, crate paths,
//! expressions. Every refusal says what to write instead and points at the token to change.
//!
//! Each attribute declares its arguments once with `crate::driver::arguments!`, which makes a
//! `#[derive(FromMeta)]` struct whose fields (`Option<Spanned<T>>`) are read with
//! [`Value::arg`].

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, Lit, LitStr, Meta};

/// A value with the span of the token that wrote it (errors about the argument as a whole point
/// at its name, which `driver::Given` keeps).
#[derive(Clone, Debug)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    /// The value's tokens: errors about the value point here.
    pub(crate) span: Span,
}

/// The value of an argument that was read, without its spans.
pub(crate) fn of<T: Copy>(arg: &Option<Spanned<T>>) -> Option<T> {
    arg.as_ref().map(|arg| arg.value)
}

/// How one kind of value is read from an argument's expression.
pub(crate) trait Value {
    type Out;

    /// What the argument takes, as messages say it: "a whole number such as `3`".
    fn expected(&self) -> String;

    /// Reads the value of argument `name`, with the span its errors about the value point at.
    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(Self::Out, Span)>;

    /// Reads `name = value` into a spanned value: a bare `name` or `name(...)` is refused with
    /// what to write instead.
    fn arg(&self, meta: &Meta) -> darling::Result<Option<Spanned<Self::Out>>> {
        let path = meta.path();
        let name = darling::util::path_to_string(path);
        let name_span = path.span();
        let parsed = match meta {
            Meta::NameValue(nv) => self
                .parse(&name, &nv.value)
                .map(|(value, span)| Spanned { value, span }),
            Meta::Path(_) => Err(syn::Error::new(
                name_span,
                format_args!(
                    "`{name}` needs a value: write `{name} = ...` with {}",
                    self.expected()
                ),
            )),
            Meta::List(list) => Err(crate::driver::as_list(&name, list)),
        };
        parsed.map(Some).map_err(darling::Error::from)
    }
}

/// The literal an expression is, if it is one (also inside the invisible group a `macro_rules!`
/// argument makes).
pub(crate) fn literal(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Group(group) => literal(&group.expr),
        _ => None,
    }
}

/// `` `name` takes {expected} ``, on the whole value.
pub(crate) fn expected(name: &str, expr: &Expr, expected: &str) -> syn::Error {
    syn::Error::new_spanned(expr, format_args!("`{name}` takes {expected}"))
}

fn lit<'a>(name: &str, expr: &'a Expr, what: &str) -> syn::Result<&'a Lit> {
    literal(expr).ok_or_else(|| expected(name, expr, what))
}

/// A duration literal such as `"450ms"` (zero is for the rules to refuse).
pub(crate) struct Duration;

const DURATION: &str = "a duration string such as \"450ms\", \"1.5s\", \"1m30s\" or \"250us\"";

impl Value for Duration {
    type Out = std::time::Duration;

    fn expected(&self) -> String {
        DURATION.to_owned()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(Self::Out, Span)> {
        let Lit::Str(text) = lit(name, expr, DURATION)? else {
            return Err(expected(name, expr, DURATION));
        };
        let duration = parse_duration(&text.value()).map_err(|why| {
            syn::Error::new(
                text.span(),
                format_args!("`{name}`: {why}; write {DURATION}"),
            )
        })?;
        Ok((duration, expr.span()))
    }
}

/// An integer literal that fits `T` (zero is for the rules to refuse).
pub(crate) struct Count<T>(std::marker::PhantomData<T>);

impl<T> Count<T> {
    pub(crate) const NEW: Self = Count(std::marker::PhantomData);
}

const COUNT: &str = "a whole number such as `3`";

impl<T: Bound> Value for Count<T> {
    type Out = T;

    fn expected(&self) -> String {
        COUNT.to_owned()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(T, Span)> {
        let Lit::Int(int) = lit(name, expr, COUNT)? else {
            return Err(expected(name, expr, COUNT));
        };
        let out_of_range = || {
            syn::Error::new(
                int.span(),
                format_args!(
                    "`{name}` must be a whole number up to {}, e.g. `{name} = 3`",
                    T::MAX
                ),
            )
        };
        let value: u128 = int.base10_parse().map_err(|_| out_of_range())?;
        if value > T::MAX {
            return Err(out_of_range());
        }
        let value = T::try_from(value).map_err(|_| out_of_range())?;
        Ok((value, expr.span()))
    }
}

/// An integer type an argument can hold.
pub(crate) trait Bound: TryFrom<u128> {
    const MAX: u128;
}

impl Bound for u32 {
    const MAX: u128 = u32::MAX as u128;
}

impl Bound for u64 {
    const MAX: u128 = u64::MAX as u128;
}

/// A number literal, integer or float; messages show the example.
pub(crate) struct Number(pub(crate) &'static str);

impl Value for Number {
    type Out = f64;

    fn expected(&self) -> String {
        format!("a number such as `{}`", self.0)
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(f64, Span)> {
        let value = match lit(name, expr, &self.expected())? {
            Lit::Float(f) => f.base10_parse::<f64>()?,
            Lit::Int(i) => i.base10_parse::<f64>()?,
            _ => return Err(expected(name, expr, &self.expected())),
        };
        Ok((value, expr.span()))
    }
}

/// A string literal; messages show the example.
pub(crate) struct Str(pub(crate) &'static str);

impl Value for Str {
    type Out = LitStr;

    fn expected(&self) -> String {
        format!("a string such as `\"{}\"`", self.0)
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(LitStr, Span)> {
        match lit(name, expr, &self.expected())? {
            Lit::Str(s) => Ok((s.clone(), expr.span())),
            _ => Err(expected(name, expr, &self.expected())),
        }
    }
}

/// `crate = "::path"`: a string holding a path.
pub(crate) struct Krate;

impl Value for Krate {
    type Out = LitStr;

    fn expected(&self) -> String {
        Str("::resilient").expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(LitStr, Span)> {
        let (krate, span) = Str("::resilient").parse(name, expr)?;
        if let Err(error) = krate.parse::<syn::Path>() {
            return Err(syn::Error::new(
                span,
                format_args!("`crate` must be a path such as \"::resilient\": {error}"),
            ));
        }
        Ok((krate, span))
    }
}

/// Any expression; messages show the example.
pub(crate) struct Expression(pub(crate) &'static str);

impl Value for Expression {
    type Out = Expr;

    fn expected(&self) -> String {
        format!("an expression such as `{}`", self.0)
    }

    fn parse(&self, _name: &str, expr: &Expr) -> syn::Result<(Expr, Span)> {
        Ok((expr.clone(), expr.span()))
    }
}

/// The path generated code names the crate by: `crate = "..."`, or `::resilient`.
pub(crate) fn krate_path(krate: Option<&Spanned<LitStr>>) -> TokenStream {
    match krate {
        Some(k) => k
            .value
            .parse::<syn::Path>()
            .map_or_else(|e| e.to_compile_error(), |p| p.into_token_stream()),
        None => quote::quote!(::resilient),
    }
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
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
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
    Ok(std::time::Duration::from_nanos(nanos as u64))
}

/// `::core::time::Duration::from_xxx(n)` in the largest unit that states `d` exactly.
pub(crate) fn duration_tokens(d: std::time::Duration) -> TokenStream {
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
    use std::time::Duration;

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
