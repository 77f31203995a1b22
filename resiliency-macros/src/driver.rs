//! The path every attribute takes: parse its arguments into a spanned model (`ast`), validate them
//! (`valid`), parse the annotated fn (`crate::func`), then expand it (`expand`). Every error of
//! every step is collected, and with errors the fn is emitted unchanged next to them, so that one
//! typo does not turn every use of the function red.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{ItemFn, LitStr, Meta, MetaList, Token};

use darling::ast::NestedMeta;

use crate::func::{self, Returns};
use crate::value::Spanned;

/// Declares an attribute's arguments: a `#[derive(FromMeta)]` struct with one
/// `Option<Spanned<T>>` field per argument, read by the [`Value`](crate::value::Value) after `=`,
/// and the list of the arguments' names. The arguments that are code (`name`, `key`, ...) are
/// written here; the settings come from the policy's table in `resiliency_rules`, whose rows
/// follow `options Path;` (see `resiliency_rules::breaker_settings!`): each becomes an argument
/// of its kind ([`parser!`]), a field of the rules' options (`fill`) and a builder call in the
/// expansion (`builder_calls`). `#[darling(rename = "...")]` gives an argument whose name is a
/// keyword.
macro_rules! arguments {
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $rename:literal) => { $rename };
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[darling(rename = $rename:literal)])?
                $field:ident: $ty:ty = $value:expr
            ),* $(,)?
        }
        options $options:path;
        $(
            $(#[doc = $setting_doc:literal])*
            $setting:ident: $setting_ty:ty as $kind:ident,
                e.g. $example:literal, default $how:tt $default:expr;
        )*
    ) => {
        $(#[$attr])*
        #[derive(Default, darling::FromMeta)]
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                #[darling(
                    default,
                    $(rename = $rename,)?
                    with = |meta| $crate::value::Value::arg(&$value, meta)
                )]
                pub(crate) $field: Option<$crate::value::Spanned<$ty>>,
            )*
            $(
                #[darling(
                    default,
                    with = |meta| $crate::value::Value::arg(
                        &$crate::value::Or($crate::value::parser!($kind, $example)),
                        meta,
                    )
                )]
                pub(crate) $setting: Option<$crate::value::Spanned<$crate::value::OrExpr<$setting_ty>>>,
            )*
            /// `crate = "..."`: the path generated code names the crate by (every attribute's
            /// last argument).
            #[darling(
                default,
                rename = "crate",
                with = |meta| $crate::value::Value::arg(&$crate::value::Krate, meta)
            )]
            pub(crate) krate: Option<$crate::value::Spanned<syn::LitStr>>,
        }

        impl $name {
            /// Puts the settings given as literals in `options`, for the rules to check.
            pub(crate) fn fill(&self, options: &mut $options) {
                $(options.$setting = $crate::value::of(&self.$setting);)*
            }

            /// The builder calls for every setting given, in the order of the table: a literal
            /// as the value it was read as, an expression as written.
            pub(crate) fn builder_calls(
                &self,
                krate: &proc_macro2::TokenStream,
            ) -> Vec<proc_macro2::TokenStream> {
                let mut calls = Vec::new();
                $(
                    if let Some(value) = &self.$setting {
                        let method = syn::Ident::new(stringify!($setting), proc_macro2::Span::call_site());
                        let value = value
                            .value
                            .tokens(|v| $crate::emit::Emit::emit(v, krate));
                        calls.push(quote::quote!(.#method(#value)));
                    }
                )*
                calls
            }
        }

        impl $crate::driver::Arguments for $name {
            const NAMES: &'static [&'static str] = &[
                $($crate::driver::arguments!(@name $field $($rename)?),)*
                $(stringify!($setting),)*
                "crate"
            ];

            fn krate(&self) -> Option<&$crate::value::Spanned<syn::LitStr>> {
                self.krate.as_ref()
            }

            fn at_first_use(&self) -> Vec<(&'static str, &syn::Expr)> {
                let mut out = Vec::new();
                $(
                    if let Some(expr) = self.$field.as_ref().and_then(|value| {
                        $crate::value::AtFirstUse::at_first_use(&value.value)
                    }) {
                        out.push(($crate::driver::arguments!(@name $field $($rename)?), expr));
                    }
                )*
                $(
                    if let Some(expr) = self.$setting.as_ref().and_then(|value| {
                        $crate::value::AtFirstUse::at_first_use(&value.value)
                    }) {
                        out.push((stringify!($setting), expr));
                    }
                )*
                out
            }

            fn value_span(&self, name: &str) -> Option<proc_macro2::Span> {
                $(
                    if name == $crate::driver::arguments!(@name $field $($rename)?) {
                        return self.$field.as_ref().map(|value| value.span);
                    }
                )*
                $(
                    if name == stringify!($setting) {
                        return self.$setting.as_ref().map(|value| value.span);
                    }
                )*
                if name == "crate" {
                    return self.krate.as_ref().map(|value| value.span);
                }
                None
            }
        }
    };
}
pub(crate) use arguments;

/// An attribute's arguments, as [`arguments!`] declares them.
pub(crate) trait Arguments: darling::FromMeta + Default {
    /// Every argument's name, in the order of the attribute's documentation.
    const NAMES: &'static [&'static str];

    /// `crate = "..."`, when given.
    fn krate(&self) -> Option<&Spanned<LitStr>>;

    /// The arguments written as an expression evaluated at the site's first use (a `const`, a
    /// call), with that expression.
    fn at_first_use(&self) -> Vec<(&'static str, &syn::Expr)>;

    /// The span of argument `name`'s value, when it was read.
    fn value_span(&self, name: &str) -> Option<Span>;
}

/// Reports the rules `args` break (checked by `resiliency_rules`, which the builders share), each
/// at the token to change: the value for a rule about a value, the argument's name for one about
/// its presence, the attribute for a required argument left out.
pub(crate) fn report<A: Arguments>(
    violations: Vec<resiliency_rules::Violation>,
    args: &A,
    given: &Given,
    errors: &mut Errors,
) {
    for violation in violations {
        let argument = violation.argument();
        let name = given.span(argument);
        let span = match violation.about() {
            resiliency_rules::About::Value => args.value_span(argument).or(name),
            resiliency_rules::About::Presence => name,
        };
        errors.push(span.unwrap_or_else(Span::call_site), violation);
    }
}

/// One attribute: its arguments, the checks across them and on the fn, and its expansion.
pub(crate) trait Attribute: Arguments {
    /// The attribute's name, as messages write it (`#[breaker]`).
    const NAME: &'static str;
    /// What the fn may return.
    const RETURNS: Returns;
    /// What [`Attribute::check_fn`] learns about the fn for the expansion.
    type Checked: Default;

    /// The checks across arguments (`valid.rs`).
    fn validate(&self, given: &Given, errors: &mut Errors);

    /// The attribute's own checks on the fn, beyond those of [`func::parse`] (none by default),
    /// with the arguments as written (`given`) for an error about one of them on this fn.
    fn check_fn(&self, _func: &ItemFn, _given: &Given, _errors: &mut Errors) -> Self::Checked {
        Self::Checked::default()
    }

    /// The expansion of a fn whose arguments and shape passed every check (`expand.rs`).
    fn expand(&self, checked: Self::Checked, func: ItemFn) -> TokenStream;

    /// `fallback = path` and `fallback_on = "..."`, as given.
    fn fallback_args(
        &self,
    ) -> (
        Option<&Spanned<syn::ExprPath>>,
        Option<&Spanned<crate::fallback::On>>,
    );

    /// The fallback, when `fallback` is given.
    fn fallback(&self) -> Option<crate::fallback::Fallback<'_>> {
        let (path, on) = self.fallback_args();
        Some(crate::fallback::Fallback {
            path: &path?.value,
            on: on.map(|on| on.value).unwrap_or_default(),
            policy: Self::NAME,
        })
    }
}

/// Parses, validates and expands `#[A(args)] item`.
pub(crate) fn run<A: Attribute>(args: TokenStream, item: TokenStream) -> TokenStream {
    run_with::<A>(args, item, Errors::default())
}

/// [`run`], with the errors an attribute found in its arguments before (`#[timeout]`'s duration
/// written without its name, see `timeout::ast::positional`), reported with the others.
pub(crate) fn run_with<A: Attribute>(
    args: TokenStream,
    item: TokenStream,
    mut errors: Errors,
) -> TokenStream {
    let (deferred, args) = func::take_deferred(args);
    let (attr, given) = parse_args::<A>(args.clone(), A::NAME, &mut errors);
    attr.validate(&given, &mut errors);
    let mut func = func::parse(item.clone(), A::NAME, A::RETURNS, &mut errors);
    if let Some(func) = &mut func {
        func::check_settings(&attr.at_first_use(), func, &mut errors);
        let (fallback, on) = attr.fallback_args();
        crate::fallback::check(fallback, on, &given, func, A::NAME, &mut errors);
        if fallback.is_some() {
            crate::fallback::name_arguments(func);
        }
    }
    let checked = func
        .as_ref()
        .map(|func| attr.check_fn(func, &given, &mut errors));
    let krate = crate::value::krate_path(attr.krate());
    let site = Stacking {
        name: A::NAME,
        deferred,
        args: &args,
        krate: &krate,
    };
    match (errors.finish(), func, checked) {
        (Ok(()), Some(func), Some(checked)) => {
            func::defer(&func, site).unwrap_or_else(|| attr.expand(checked, func))
        }
        (Err(error), _, _) => {
            let mut out = error.to_compile_error();
            out.extend(item);
            out
        }
        (Ok(()), _, _) => item,
    }
}

/// What an attribute needs to know to step aside for another of ours below it (see
/// [`func::defer`]).
#[derive(Clone, Copy)]
pub(crate) struct Stacking<'a> {
    /// The attribute's name.
    pub(crate) name: &'a str,
    /// Whether it already stepped aside once (its arguments began with `__deferred`).
    pub(crate) deferred: bool,
    /// Its arguments, without `__deferred`.
    pub(crate) args: &'a TokenStream,
    /// The path generated code names the crate by.
    pub(crate) krate: &'a TokenStream,
}

/// The arguments written, even those whose value did not parse, with their names' spans: checks
/// across arguments look here, so that a malformed `timeout` is not also reported missing.
#[derive(Default)]
pub(crate) struct Given {
    written: Vec<(String, Span)>,
    /// The arguments an unknown name was taken for (`totl`, `total`'s typo): refused at that
    /// name, and not also reported missing.
    meant: Vec<&'static str>,
}

impl Given {
    /// The arguments written whose value the rules cannot read: a malformed one, and an
    /// expression the builder checks at first use. The rules count them as given (for the rules
    /// about presence) and skip their values.
    pub(crate) fn written<A: Arguments>(&self, args: &A) -> Vec<&'static str> {
        let unread = A::NAMES
            .iter()
            .copied()
            .filter(|name| self.span(name).is_some() && args.value_span(name).is_none());
        let expressions = args.at_first_use().into_iter().map(|(name, _)| name);
        let meant = self.meant.iter().copied();
        unread.chain(expressions).chain(meant).collect()
    }

    /// The span of argument `name`'s name, when it was written.
    pub(crate) fn span(&self, name: &str) -> Option<Span> {
        self.written
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, span)| *span)
    }
}

/// Splits the attribute's tokens into `name = value` arguments and reads them into `A`: unknown
/// names (with darling's suggestion), repeated ones and `name(...)` are refused first, then each
/// argument is read on its own, so that one malformed value does not hide the others and the
/// checks across arguments still see every value that parsed.
pub(crate) fn parse_args<A: Arguments>(
    tokens: TokenStream,
    macro_name: &str,
    errors: &mut Errors,
) -> (A, Given) {
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(metas) => metas,
        Err(error) => {
            errors.push(
                error.span(),
                format_args!(
                    "{error}; `#[{macro_name}]` takes `name = value` arguments separated by commas"
                ),
            );
            return (A::default(), Given::default());
        }
    };
    let mut given = Given::default();
    let mut known = Vec::new();
    for meta in metas {
        let path = meta.path();
        let name = path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_else(|| path.to_token_stream().to_string().replace(' ', ""));
        let name_span = path.span();
        if !A::NAMES.contains(&name.as_str()) {
            let (message, meant) = unknown(macro_name, &name, A::NAMES);
            errors.push(name_span, message);
            given.meant.extend(meant);
            continue;
        }
        if given.span(&name).is_some() {
            errors.push(
                name_span,
                format_args!("`{name}` is given more than once; keep one"),
            );
            continue;
        }
        if let Meta::List(list) = &meta {
            errors.add(as_list(&name, list));
            continue;
        }
        given.written.push((name, name_span));
        known.push(NestedMeta::Meta(meta));
    }
    let mut parsed = Vec::new();
    for meta in known {
        match A::from_list(std::slice::from_ref(&meta)) {
            Ok(_) => parsed.push(meta),
            Err(error) => errors.darling(error),
        }
    }
    let attr = A::from_list(&parsed).unwrap_or_else(|error| {
        errors.darling(error);
        A::default()
    });
    (attr, given)
}

/// The refusal of `name(...)`.
pub(crate) fn as_list(name: &str, list: &MetaList) -> syn::Error {
    syn::Error::new(
        list.delimiter.span().join(),
        format_args!("write `{name} = value`, not `{name}(...)`"),
    )
}

/// Names of other attributes' arguments, or of other libraries', that mean an argument of this
/// one: `(attribute, name written, argument meant, why)`.
const MISNAMED: &[(&str, &str, &str, &str)] = &[(
    "timeout",
    "timeout",
    "total",
    "the time limit is `total` (`#[timeout(\"2s\")]` is short for `#[timeout(total = \"2s\")]`); ",
)];

/// The message about an unknown argument: the argument it means if it is a known misnaming, or
/// darling's suggestion if one is close, and every name; with the argument meant, if any.
fn unknown(
    macro_name: &str,
    name: &str,
    known: &'static [&'static str],
) -> (String, Option<&'static str>) {
    let misnamed = MISNAMED
        .iter()
        .find(|(attribute, wrong, _, _)| *attribute == macro_name && *wrong == name)
        .map(|(_, _, right, why)| (*right, *why));
    let meant = misnamed.map(|(right, _)| right).or_else(|| {
        let close = suggestion(name, known)?;
        known.iter().copied().find(|k| *k == close)
    });
    let hint = match (meant, misnamed) {
        (Some(meant), Some((_, why))) => format!("did you mean `{meant}`? {why}"),
        (Some(meant), None) => format!("did you mean `{meant}`? "),
        (None, _) => String::new(),
    };
    let message = format!(
        "unknown argument `{name}` of `#[{macro_name}]`; {hint}the arguments are: {}",
        known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    (message, meant)
}

/// The known name darling suggests for `name` (the closest by Jaro-Winkler similarity, when it is
/// above 0.8), read off darling's own unknown-field error.
fn suggestion(name: &str, known: &[&str]) -> Option<String> {
    let message = darling::Error::unknown_field_with_alts(name, known).to_string();
    let (_, close) = message.split_once("Did you mean `")?;
    close.strip_suffix("`?").map(str::to_owned)
}

/// Collects errors so that one run reports every problem. Errors stay `syn::Error`s, which keep a
/// span from the first to the last token of what they point at; darling's are added as they are.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.add(syn::Error::new(span, message));
    }

    pub(crate) fn add(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// darling's errors, each with its own span.
    pub(crate) fn darling(&mut self, error: darling::Error) {
        for error in error.flatten() {
            self.add(error.into());
        }
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of `A::NAMES` is an argument darling reads (a bare name is refused for its missing
    /// value, not as unknown), and a name outside them is not.
    fn names_are_fields<A: Arguments>() {
        let read = |name: &str| {
            let meta: Meta = syn::parse_str(name).expect("a name parses");
            A::from_list(&[NestedMeta::Meta(meta)])
                .err()
                .map(|error| error.to_string())
        };
        for name in A::NAMES {
            let refusal = read(name).expect("a bare name has no value");
            assert!(refusal.contains("needs a value"), "{name}: {refusal}");
        }
        let refusal = read("colour").expect("an unknown name is refused");
        assert!(refusal.starts_with("Unknown field"), "{refusal}");
    }

    #[test]
    fn every_name_is_an_argument() {
        names_are_fields::<crate::breaker::Args>();
        names_are_fields::<crate::race_retry::Args>();
        names_are_fields::<crate::too_busy::Args>();
        names_are_fields::<crate::timeout::Args>();
        names_are_fields::<crate::rate_limit::Args>();
    }

    #[test]
    fn suggestions() {
        let known = ["error_threshold", "error_timeout", "timeout"];
        assert_eq!(
            suggestion("error_treshold", &known).as_deref(),
            Some("error_threshold")
        );
        assert_eq!(suggestion("timout", &known).as_deref(), Some("timeout"));
        assert_eq!(suggestion("colour", &known), None);
    }
}
