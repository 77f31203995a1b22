//! The values attribute arguments take, each read from `name = value` by a [`Value`] into a
//! [`Spanned`] value: durations ("450ms", "1m30s"), whole numbers, numbers, strings, crate paths,
//! expressions. Every refusal says what to write instead and points at the token to change.
//!
//! A number or a duration may also be any other expression (a `const`, a call, a block): [`Or`]
//! reads it as [`OrExpr::Expr`], which the expansion passes unchanged to the builder method of
//! the argument's name, so that the compiler checks its type and the builder its range, at the
//! site's first use.
//!
//! Each attribute declares its arguments once with `crate::driver::arguments!`, which makes a
//! `#[derive(FromMeta)]` struct whose fields (`Option<Spanned<T>>`) are read with
//! [`Value::arg`].

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, Lit, LitStr, Meta};

pub(crate) use resiliency_rules::parse_duration;

/// A value with the span of the token that wrote it (errors about the argument as a whole point
/// at its name, which `driver::Given` keeps).
#[derive(Clone, Debug)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    /// The value's tokens: errors about the value point here.
    pub(crate) span: Span,
}

/// The literal value of an argument, without its spans: `None` when left out or an expression
/// (which the rules cannot read; see [`AtFirstUse`]).
pub(crate) fn of<T: Copy>(arg: &Option<Spanned<OrExpr<T>>>) -> Option<T> {
    match arg.as_ref().map(|arg| &arg.value) {
        Some(OrExpr::Literal(value)) => Some(*value),
        _ => None,
    }
}

/// A number or duration argument: a literal, read and checked at compile time, or any other
/// expression, passed unchanged to the builder method of the argument's name.
#[derive(Clone, Debug)]
pub(crate) enum OrExpr<T> {
    Literal(T),
    Expr(Expr),
}

impl<T> OrExpr<T> {
    /// The builder call's argument: the literal's tokens, or the expression as written (its
    /// spans kept, so that a type error points at it).
    pub(crate) fn tokens(&self, literal: impl FnOnce(&T) -> TokenStream) -> TokenStream {
        match self {
            OrExpr::Literal(value) => literal(value),
            OrExpr::Expr(expr) => expr.to_token_stream(),
        }
    }
}

/// The literal form `V` reads (also a literal it refuses, such as `timeout = 2`), or any other
/// expression.
pub(crate) struct Or<V>(pub(crate) V);

impl<V: Value> Value for Or<V> {
    type Out = OrExpr<V::Out>;

    fn expected(&self) -> String {
        self.0.expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(Self::Out, Span)> {
        if written_as_literal(expr) {
            let (value, span) = self.0.parse(name, expr)?;
            Ok((OrExpr::Literal(value), span))
        } else {
            Ok((OrExpr::Expr(expr.clone()), expr.span()))
        }
    }
}

/// A literal, or a negated one (`-1`, which the literal forms refuse with what is valid).
fn written_as_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Lit(_) => true,
        Expr::Group(group) => written_as_literal(&group.expr),
        Expr::Unary(unary) => {
            matches!(unary.op, syn::UnOp::Neg(_)) && written_as_literal(&unary.expr)
        }
        _ => false,
    }
}

/// The expression an argument's value is evaluated from at the site's first use, if any: a
/// number or duration written as an expression. (`key`, `count_if` and `retry_if` are
/// expressions too, but of each call, not of the site's settings.)
pub(crate) trait AtFirstUse {
    fn at_first_use(&self) -> Option<&Expr> {
        None
    }
}

impl AtFirstUse for LitStr {}

impl AtFirstUse for Expr {}

impl<T> AtFirstUse for OrExpr<T> {
    fn at_first_use(&self) -> Option<&Expr> {
        match self {
            OrExpr::Expr(expr) => Some(expr),
            OrExpr::Literal(_) => None,
        }
    }
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

/// A rate literal: `"100/s"`, `"10/100ms"`.
pub(crate) struct Rate;

const RATE: &str = "a rate string such as \"100/s\", \"5/m\" or \"10/100ms\"";

impl Value for Rate {
    type Out = resiliency_rules::Rate;

    fn expected(&self) -> String {
        RATE.to_owned()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(Self::Out, Span)> {
        let Lit::Str(text) = lit(name, expr, RATE)? else {
            return Err(expected(name, expr, RATE));
        };
        let rate = resiliency_rules::parse_rate(&text.value())
            .map_err(|why| syn::Error::new(text.span(), format_args!("`{name}`: {why}")))?;
        Ok((rate, expr.span()))
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

impl Bound for usize {
    const MAX: u128 = usize::MAX as u128;
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
        Str("::resiliency").expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(LitStr, Span)> {
        let (krate, span) = Str("::resiliency").parse(name, expr)?;
        if let Err(error) = krate.parse::<syn::Path>() {
            return Err(syn::Error::new(
                span,
                format_args!("`crate` must be a path such as \"::resiliency\": {error}"),
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

/// The path generated code names the crate by: `crate = "..."`, or `::resiliency`.
pub(crate) fn krate_path(krate: Option<&Spanned<LitStr>>) -> TokenStream {
    match krate {
        Some(k) => k
            .value
            .parse::<syn::Path>()
            .map_or_else(|e| e.to_compile_error(), |p| p.into_token_stream()),
        None => quote::quote!(::resiliency),
    }
}

/// The site's name, as the closure its `static` is made with, and the marker fn it needs: the
/// `name = "..."` given (`|| "payments"`, no marker), or else the path of the fn, read off a
/// marker fn `marker` declared beside the site (so that `A::get` and `B::get` in one module get
/// two sites): `fn marker() {}` and `|| ::resiliency::__private::name_of(marker)`.
pub(crate) fn site_name(
    name: Option<&Spanned<LitStr>>,
    marker: &str,
    krate: &TokenStream,
) -> (Option<TokenStream>, TokenStream) {
    match name {
        Some(name) => {
            let name = &name.value;
            (None, quote::quote!(|| #name))
        }
        None => {
            let marker = proc_macro2::Ident::new(marker, Span::call_site());
            (
                Some(quote::quote!(fn #marker() {})),
                quote::quote!(|| #krate::__private::name_of(#marker)),
            )
        }
    }
}

/// `|builder| builder.a(..).b(..)`: the closure that applies an attribute's settings to its
/// policy's builder on the site's first use. The parameter is hygienic, so that an expression
/// in the settings cannot name it; the closure captures nothing (it is a `fn` pointer), so an
/// expression that names a local of the fn (an argument) is a compile error.
pub(crate) fn configure(builder: &str, options: &[TokenStream]) -> TokenStream {
    let builder = proc_macro2::Ident::new(builder, Span::mixed_site());
    quote::quote!(|#builder| #builder #(#options)*)
}

/// `::core::time::Duration::from_xxx(n)` in the largest unit that states `d` exactly.
pub(crate) fn duration_tokens(d: std::time::Duration) -> TokenStream {
    let nanos = d.as_nanos() as u64;
    let (ctor, n) = if nanos.is_multiple_of(1_000_000_000) {
        ("from_secs", nanos / 1_000_000_000)
    } else if nanos.is_multiple_of(1_000_000) {
        ("from_millis", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1_000) {
        ("from_micros", nanos / 1_000)
    } else {
        ("from_nanos", nanos)
    };
    let ctor = proc_macro2::Ident::new(ctor, Span::call_site());
    let n = proc_macro2::Literal::u64_unsuffixed(n);
    quote::quote!(::core::time::Duration::#ctor(#n))
}

/// The [`Value`] that reads a setting of kind `$kind` (a kind of `resiliency_rules`' tables),
/// with `$example` for the messages that need one.
macro_rules! parser {
    (Count, $example:literal) => {
        $crate::value::Count::NEW
    };
    (Keys, $example:literal) => {
        $crate::value::Count::NEW
    };
    (Number, $example:literal) => {
        $crate::value::Number(stringify!($example))
    };
    (Factor, $example:literal) => {
        $crate::value::Number(stringify!($example))
    };
    (Duration, $example:literal) => {
        $crate::value::Duration
    };
    (Timeout, $example:literal) => {
        $crate::value::Duration
    };
    (After, $example:literal) => {
        $crate::race_retry::ast::AfterValue
    };
    (Budget, $example:literal) => {
        $crate::race_retry::ast::BudgetValue
    };
    (Backoff, $example:literal) => {
        $crate::race_retry::ast::BackoffValue
    };
    (InFlight, $example:literal) => {
        $crate::too_busy::ast::InFlightValue
    };
    (Rate, $example:literal) => {
        $crate::value::Rate
    };
}
pub(crate) use parser;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
