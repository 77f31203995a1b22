//! The arguments of `#[timeout(...)]`, each kept with its span: `total` (a duration, or an
//! expression of type `Duration`), which may also come first without its name
//! (`#[timeout("2s")]`, see [`positional`]).

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::driver::Errors;
use crate::value::Str;

resiliency_rules::timeout_settings!(crate::driver::arguments! {
    /// `#[timeout(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct Timeout {
        name: LitStr = Str("payments"),
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::TimeoutOptions;
});

/// `#[timeout("2s", ...)]` read as `#[timeout(total = "2s", ...)]` ([`crate::positional`]).
pub(crate) fn positional(args: TokenStream, errors: &mut Errors) -> TokenStream {
    crate::positional::positional(args, "timeout", "total", "duration", errors)
}

#[cfg(test)]
mod tests {
    use super::positional;
    use crate::driver::Errors;

    /// The arguments as the driver reads them, and the errors found.
    fn read(args: &str) -> (String, Vec<String>) {
        let mut errors = Errors::default();
        let args = positional(args.parse().unwrap(), &mut errors).to_string();
        let errors = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        };
        (args, errors)
    }

    fn read_ok(args: &str) -> String {
        let (args, errors) = read(args);
        assert!(errors.is_empty(), "{errors:?}");
        args
    }

    #[test]
    fn a_literal_first_is_the_total() {
        assert_eq!(read_ok("\"2s\""), "total = \"2s\"");
        assert_eq!(
            read_ok("\"2s\", name = \"x\""),
            "total = \"2s\" , name = \"x\""
        );
        assert_eq!(read_ok("__deferred, \"2s\""), "__deferred , total = \"2s\"");
        assert_eq!(read_ok("total = \"2s\""), "total = \"2s\"");
        assert_eq!(
            read_ok("__deferred, total = \"2s\""),
            "__deferred , total = \"2s\""
        );
        assert_eq!(read_ok(""), "");
        // A value with a comma between `<` and `>` is put back as written.
        assert_eq!(
            read_ok("total = limit::<A, B>()"),
            "total = limit ::< A , B > ()"
        );
    }

    #[test]
    fn a_literal_anywhere_else_is_refused_and_left_out() {
        let (args, errors) = read("\"2s\", \"5s\"");
        assert_eq!(args, "total = \"2s\"");
        assert!(errors[0].contains("remove `\"5s\"`"), "{errors:?}");
        let (args, errors) = read("\"2s\", total = \"5s\"");
        assert_eq!(args, "total = \"2s\"");
        assert!(
            errors[0].starts_with("`total` is given twice"),
            "{errors:?}"
        );
        let (args, errors) = read("total = \"5s\", \"2s\"");
        assert_eq!(args, "total = \"5s\"");
        assert!(errors[0].contains("already gives"), "{errors:?}");
        // Alone but not first: read as the `total`, so that it is not also reported missing.
        let (args, errors) = read("name = \"x\", \"2s\"");
        assert_eq!(args, "name = \"x\" , total = \"2s\"");
        assert!(errors[0].contains("only when it comes first"), "{errors:?}");
    }
}
