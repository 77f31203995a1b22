//! The annotated item: a fn (free function or method, `async` or blocking) that returns a
//! `Result`.

use proc_macro2::TokenStream;
use syn::spanned::Spanned as _;
use syn::{ItemFn, ReturnType, Type};

use crate::driver::{Errors, Stacking};

/// What an attribute can refuse a call through.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Returns {
    /// `Result<T, E>` with `E: From<Rejected>` only.
    Result,
    /// Also a response type (`impl IntoResponse`, `Response`, anything `resiliency::too_busy::Refuse`).
    Refusable,
}

const REFUSABLE: &str = "`Result<T, E>` with `E: From<resiliency::Rejected>`, or with the `axum` feature `axum::response::Response` or `impl IntoResponse`";

/// Parses the item under `#[macro_name]`, reporting what keeps it from being wrapped.
pub(crate) fn parse(
    item: TokenStream,
    macro_name: &str,
    returns: Returns,
    errors: &mut Errors,
) -> Option<ItemFn> {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(error) => {
            match syn::parse2::<syn::TraitItemFn>(item) {
                Ok(declaration) => errors.push(
                    declaration.sig.ident.span(),
                    format_args!(
                        "`#[{macro_name}]` needs a body to wrap: put it on `{}` in the `impl`, not on the trait's declaration",
                        declaration.sig.ident
                    ),
                ),
                Err(_) => errors.push(
                    error.span(),
                    format_args!(
                        "`#[{macro_name}]` goes on a fn with a body (a free function or a method)"
                    ),
                ),
            }
            return None;
        }
    };
    let sig = &func.sig;
    match (&sig.output, returns) {
        (ReturnType::Default, Returns::Result) => errors.push(
            sig.ident.span(),
            format_args!(
                "`#[{macro_name}]` needs a return type: `-> Result<T, E>` with `E: From<resiliency::Rejected>`"
            ),
        ),
        (ReturnType::Default, Returns::Refusable) => errors.push(
            sig.ident.span(),
            format_args!("`#[{macro_name}]` needs a return type it can refuse through: {REFUSABLE}"),
        ),
        (ReturnType::Type(_, ty), Returns::Result) if !could_be_result(ty) => {
            errors.add(syn::Error::new_spanned(
                ty,
                format_args!(
                    "`#[{macro_name}]` needs the fn to return `Result<T, E>` with `E: From<resiliency::Rejected>`, so that it can refuse a call with `Err`"
                ),
            ))
        }
        (ReturnType::Type(_, ty), Returns::Refusable)
            if !matches!(**ty, Type::ImplTrait(_)) && !could_be_result(ty) =>
        {
            errors.add(syn::Error::new_spanned(
                ty,
                format_args!("`#[{macro_name}]` cannot refuse a call through this type; it supports {REFUSABLE}"),
            ))
        }
        _ => {}
    }
    Some(func)
}

/// Standard types that are certainly not a `Result`.
const NOT_RESULTS: &[&str] = &[
    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f32", "f64", "String", "Vec", "Option", "Box", "Rc", "Arc", "HashMap",
    "BTreeMap", "HashSet", "Duration", "Instant",
];

/// A path type may be a `Result` or an alias of one (`io::Result<T>`, `anyhow::Result<T>`), which
/// the compiler checks; anything else (a tuple, a reference, `impl Trait`, `u32`, `Option<T>`,
/// ...) cannot be.
pub(crate) fn could_be_result(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_none_or(|last| !NOT_RESULTS.contains(&last.ident.to_string().as_str())),
        Type::Macro(_) => true,
        Type::Group(group) => could_be_result(&group.elem),
        Type::Paren(paren) => could_be_result(&paren.elem),
        _ => false,
    }
}

/// The fn's body as an `async move` block whose result is checked against the fn's return type,
/// as it is without the attribute: a dead `return` of that type comes first (`if false`, never
/// taken), so the tail
/// expression and every early `return` are coercion sites (`Ok(&self.name)` for
/// `Result<&str, E>`, a `Box<Concrete>` for a `Box<dyn Trait>`), and `?` knows its error type.
/// A return type that mentions `impl Trait` cannot be written in a `let`: its body is left as is.
pub(crate) fn async_body(func: &ItemFn, krate: &TokenStream) -> TokenStream {
    let block = &func.block;
    // The body's statements, not its block: a block as the tail of another block would have
    // rustc warn of unnecessary braces in the user's code (`{ Ok(x) }`).
    let stmts = &block.stmts;
    match return_type(func) {
        Some(ret) if !mentions_impl(quote::ToTokens::to_token_stream(ret)) => quote::quote! {
            async move {
                if false {
                    return #krate::__private::body_returns::<#ret>();
                }
                #(#stmts)*
            }
        },
        _ => quote::quote!(async move #block),
    }
}

/// The reader of each error's `RetryHint`, for the breaker to hold open as long as an upstream
/// asked: a closure over the fn's error type (or `Failure<E>` when a fallback keeps refusals
/// apart), written here, where that type is known, so that a type without the trait reads none
/// and needs nothing. A return type that cannot be named (`impl Trait`) reads none.
pub(crate) fn hint_reader(func: &ItemFn, refusals: bool, krate: &TokenStream) -> TokenStream {
    match return_type(func) {
        Some(ret) if !mentions_impl(quote::ToTokens::to_token_stream(ret)) => {
            let error = quote::quote!(<#ret as #krate::__private::IsResult>::Err);
            let error = if refusals {
                quote::quote!(#krate::__private::Failure<#error>)
            } else {
                error
            };
            quote::quote!(#krate::__private::hint_reader!(#error))
        }
        _ => quote::quote!(#krate::__private::no_hint),
    }
}

/// Whether the fn is blocking (not `async`): its body then runs in a closure called at once.
pub(crate) fn is_blocking(func: &ItemFn) -> bool {
    func.sig.asyncness.is_none()
}

/// The body of a blocking fn as a `move` closure that returns the fn's return type, so that
/// every `return` and `?` in it leaves the closure as it left the fn, and the tail expression and
/// early returns are coercion sites as they were (`Ok(&self.name)` for `Result<&str, E>`). The
/// closure is called at once, so borrowed arguments and `&self` are captured as they are. A
/// return type that mentions `impl Trait` cannot be written on a closure: it is left out.
pub(crate) fn blocking_body(func: &ItemFn) -> TokenStream {
    let stmts = &func.block.stmts;
    match return_type(func) {
        Some(ret) if !mentions_impl(quote::ToTokens::to_token_stream(ret)) => quote::quote! {
            move || -> #ret { #(#stmts)* }
        },
        _ => {
            let block = &func.block;
            quote::quote!(move || #block)
        }
    }
}

/// A fn's attributes split into its outer ones (`#[...]`, written above the fn) and the inner ones
/// of its body (`#![...]`), which the expansion keeps at the top of the fn's new body.
pub(crate) fn split_attrs(
    attrs: Vec<syn::Attribute>,
) -> (Vec<syn::Attribute>, Vec<syn::Attribute>) {
    attrs
        .into_iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Outer))
}

/// Whether a type's tokens mention `impl` (an `impl Trait` anywhere in it).
pub(crate) fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == "impl",
        proc_macro2::TokenTree::Group(group) => mentions_impl(group.stream()),
        _ => false,
    })
}

/// The return type of a checked fn.
pub(crate) fn return_type(func: &ItemFn) -> Option<&Type> {
    match &func.sig.output {
        ReturnType::Type(_, ty) => Some(ty),
        ReturnType::Default => None,
    }
}

/// Whether a return type is written as a `Result` (`Result<T, E>`, `io::Result<T>`,
/// `anyhow::Result<T>`): a path whose last segment is `Result`.
pub(crate) fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == "Result"),
        Type::Group(group) => is_result(&group.elem),
        Type::Paren(paren) => is_result(&paren.elem),
        _ => false,
    }
}

/// Where a problem with the return type is best shown: the `E` of a written-out `Result<T, E>`,
/// else the whole type. A span is one token here (it goes on a generated method name), so a path
/// is shown by its last segment: `Error` of `io::Error`, `Result` of `io::Result<T>`, rather than
/// `io`.
pub(crate) fn error_type_span(func: &ItemFn) -> proc_macro2::Span {
    let Some(ty) = return_type(func) else {
        return func.sig.ident.span();
    };
    if let Type::Path(path) = ty {
        if let Some(last) = path.path.segments.last() {
            if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                if args.args.len() == 2 {
                    return match &args.args[1] {
                        syn::GenericArgument::Type(error) => type_span(error),
                        other => other.span(),
                    };
                }
            }
        }
    }
    type_span(ty)
}

/// The one token that best stands for a type: a path's last segment, else its first token.
fn type_span(ty: &Type) -> proc_macro2::Span {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .map_or_else(|| ty.span(), |last| last.ident.span()),
        Type::Group(group) => type_span(&group.elem),
        _ => ty.span(),
    }
}

/// The names of the rows of `resiliency_rules::policies!` that follow, as a list.
macro_rules! names {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident: $name:ident, env $variable:literal,
            options $options:ident { $($field:ident: $value:expr),* },
            rules $rules:ident, table $table:ident;
    )*) => {
        &[$(stringify!($name)),*]
    };
}

/// The attributes of this crate, by the last segment of their path: one per policy.
const RESILIENCY: &[&str] = resiliency_rules::policies!(names! {});

/// The argument a deferred attribute carries first (see [`defer`]).
pub(crate) const DEFERRED: &str = "__deferred";

/// Takes a leading `__deferred` off an attribute's arguments: true when it was there.
pub(crate) fn take_deferred(args: TokenStream) -> (bool, TokenStream) {
    let mut tokens = args.clone().into_iter();
    match tokens.next() {
        Some(proc_macro2::TokenTree::Ident(ident)) if ident == DEFERRED => {
            // Drop the comma after it, if any.
            let rest: TokenStream = tokens
                .skip_while(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','))
                .collect();
            (true, rest)
        }
        _ => (false, args),
    }
}

/// Stacked attributes of this crate apply top to bottom: the first written is the outermost.
/// Rust expands the top one first, which would make it the innermost, so an attribute that finds
/// another of ours not yet expanded below it steps aside: it re-emits the fn with itself moved
/// below the others, marked deferred, before the attributes deferred earlier (so that they expand
/// in reverse order of writing, innermost first). An attribute that stepped aside once expands.
pub(crate) fn defer(func: &ItemFn, site: Stacking<'_>) -> Option<TokenStream> {
    let Stacking {
        name: me,
        deferred,
        args,
        krate,
    } = site;
    if deferred {
        return None;
    }
    let ours = |attr: &syn::Attribute| is_ours(attr.path(), krate);
    let deferred = |attr: &syn::Attribute| match &attr.meta {
        syn::Meta::List(list) => take_deferred(list.tokens.clone()).0,
        _ => false,
    };
    if !func.attrs.iter().any(|a| ours(a) && !deferred(a)) {
        return None;
    }
    let me = proc_macro2::Ident::new(me, proc_macro2::Span::call_site());
    let marker = proc_macro2::Ident::new(DEFERRED, proc_macro2::Span::call_site());
    let separator = if args.is_empty() {
        quote::quote!()
    } else {
        quote::quote!(,)
    };
    let myself: syn::Attribute = syn::parse_quote!(#[#krate::#me(#marker #separator #args)]);
    let mut func = func.clone();
    let at = func
        .attrs
        .iter()
        .position(|a| ours(a) && deferred(a))
        .unwrap_or(func.attrs.len());
    func.attrs.insert(at, myself);
    Some(quote::ToTokens::into_token_stream(func))
}

/// Whether an attribute's path names one of this crate's attributes: its last segment one of
/// theirs, written alone (`#[timeout]`) or after this crate's path (`resiliency::`, or the path
/// `crate = "..."` gives). Another crate's attribute of the same name (`#[ntest::timeout]`) is not.
fn is_ours(path: &syn::Path, krate: &TokenStream) -> bool {
    let Some(last) = path.segments.last() else {
        return false;
    };
    if !RESILIENCY.contains(&last.ident.to_string().as_str()) {
        return false;
    }
    if path.segments.len() == 1 {
        return path.leading_colon.is_none();
    }
    let prefix: Vec<String> = path
        .segments
        .iter()
        .take(path.segments.len() - 1)
        .map(|s| s.ident.to_string())
        .collect();
    let written = format!(
        "{}{}",
        if path.leading_colon.is_some() {
            "::"
        } else {
            ""
        },
        prefix.join("::")
    );
    let krate = krate.to_string().replace(' ', "");
    prefix == ["resiliency"] || written == krate || written == krate.trim_start_matches("::")
}

/// Refuses a setting written as an expression (`timeout = Duration::from_millis(ms)`) that names
/// one of the fn's arguments or `self`: settings are evaluated once, at the site's first use,
/// outside any call. (rustc would say "attempt to use a non-constant value in a constant".) An
/// expression that binds names of its own (`let`, a closure) is left to the compiler.
pub(crate) fn check_settings(
    settings: &[(&'static str, &syn::Expr)],
    func: &ItemFn,
    errors: &mut Errors,
) {
    let arguments = argument_names(func);
    for (name, expr) in settings {
        let tokens = quote::ToTokens::to_token_stream(expr);
        if binds_names(tokens.clone()) {
            continue;
        }
        if let Some(local) = names_local(tokens, &arguments) {
            errors.push(
                local.span(),
                format_args!(
                    "`{name}` is evaluated once, at the first call, so it cannot use the argument `{local}`; write a literal, or an expression over consts, statics and fns"
                ),
            );
        }
    }
}

/// The names the fn's arguments bind.
pub(crate) fn argument_names(func: &ItemFn) -> Vec<String> {
    fn each(pat: &syn::Pat, out: &mut Vec<String>) {
        match pat {
            syn::Pat::Ident(ident) => {
                out.push(ident.ident.to_string());
                if let Some((_, sub)) = &ident.subpat {
                    each(sub, out);
                }
            }
            syn::Pat::Tuple(tuple) => tuple.elems.iter().for_each(|p| each(p, out)),
            syn::Pat::TupleStruct(tuple) => tuple.elems.iter().for_each(|p| each(p, out)),
            syn::Pat::Struct(s) => s.fields.iter().for_each(|field| each(&field.pat, out)),
            syn::Pat::Slice(slice) => slice.elems.iter().for_each(|p| each(p, out)),
            syn::Pat::Reference(reference) => each(&reference.pat, out),
            syn::Pat::Paren(paren) => each(&paren.pat, out),
            syn::Pat::Type(typed) => each(&typed.pat, out),
            _ => {}
        }
    }
    let mut out = vec!["self".to_owned()];
    for input in &func.sig.inputs {
        if let syn::FnArg::Typed(typed) = input {
            each(&typed.pat, &mut out);
        }
    }
    out
}

/// Whether the tokens bind names (`let`, a closure's `|..|`), which could shadow an argument's.
fn binds_names(tokens: TokenStream) -> bool {
    use proc_macro2::TokenTree;
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => ident == "let",
        TokenTree::Punct(punct) => punct.as_char() == '|',
        TokenTree::Group(group) => binds_names(group.stream()),
        TokenTree::Literal(_) => false,
    })
}

/// The first of `names` the tokens use as a variable: not a field or method after `.`, a path
/// segment next to `::`, a macro's name, nor a struct field's name before `:`.
fn names_local(tokens: TokenStream, names: &[String]) -> Option<proc_macro2::Ident> {
    use proc_macro2::TokenTree;
    let punct = |token: Option<&TokenTree>, c: char| matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == c);
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) => {
                let before = |n: usize| i.checked_sub(n).and_then(|at| tokens.get(at));
                let field_or_path =
                    punct(before(1), '.') || (punct(before(1), ':') && punct(before(2), ':'));
                let named_next = punct(tokens.get(i + 1), '!') || punct(tokens.get(i + 1), ':');
                if !field_or_path && !named_next && names.iter().any(|name| ident == name) {
                    return Some(ident.clone());
                }
            }
            TokenTree::Group(group) => {
                if let Some(local) = names_local(group.stream(), names) {
                    return Some(local);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(expr: &str) -> Option<String> {
        let names = ["ms".to_owned(), "self".to_owned()];
        names_local(expr.parse().unwrap(), &names).map(|ident| ident.to_string())
    }

    #[test]
    fn attributes_of_this_crate_are_told_from_others_of_the_same_name() {
        let ours = |path: &str, krate: &str| {
            is_ours(&syn::parse_str(path).unwrap(), &krate.parse().unwrap())
        };
        assert!(ours("timeout", "::resiliency"));
        assert!(ours("resiliency::breaker", "::resiliency"));
        assert!(ours("::resiliency::too_busy", "::resiliency"));
        assert!(ours("svc::resiliency::race_retry", "svc::resiliency"));
        assert!(ours("::svc::timeout", "::svc"));
        assert!(!ours("ntest::timeout", "::resiliency"));
        assert!(!ours("tokio::test", "::resiliency"));
        assert!(!ours("instrument", "::resiliency"));
        assert!(!ours("::timeout", "::resiliency"));
    }

    #[test]
    fn a_setting_that_names_an_argument_is_found() {
        assert_eq!(local("Duration::from_millis(ms)").as_deref(), Some("ms"));
        assert_eq!(local("2 * { ms }").as_deref(), Some("ms"));
        assert_eq!(local("self.limit").as_deref(), Some("self"));
        // Paths, fields, macros and struct fields of that name are not the argument.
        assert_eq!(local("config::ms + ms::LIMIT + self::LIMIT"), None);
        assert_eq!(local("CONFIG.ms + ms!() + Limits { ms: 3 }.ms"), None);
        assert!(binds_names("{ let ms = 3; ms }".parse().unwrap()));
    }
}
