//! The arguments of `#[too_busy(...)]`, each kept with its span; each is a literal or an
//! expression (`OrExpr`). `valid` checks the shared rules on the literals.

use proc_macro2::Span;
use syn::{Expr, Lit, LitStr};

pub(crate) use resiliency_rules::InFlight;

use crate::value::{self, Count, Str, Value};

resiliency_rules::too_busy_settings!(crate::driver::arguments! {
    /// `#[too_busy(...)]`'s arguments: the code, then the settings of `resiliency_rules`' table.
    pub(crate) struct TooBusy {
        name: LitStr = Str("payments"),
        fallback: syn::ExprPath = crate::fallback::FallbackPath,
        fallback_on: crate::fallback::On = crate::fallback::FallbackOn,
    }
    options resiliency_rules::TooBusyOptions;
});

/// The word `max_in_flight` takes for a learned limit.
const AUTO: &str = "auto";

const IN_FLIGHT: &str = "`max_in_flight` takes a whole number such as `256`, or `\"auto\"` for a limit learned from the calls' latency";

/// `max_in_flight = 256` or `max_in_flight = "auto"`.
pub(crate) struct InFlightValue;

impl Value for InFlightValue {
    type Out = InFlight;

    fn expected(&self) -> String {
        Count::<u32>::NEW.expected()
    }

    fn parse(&self, name: &str, expr: &Expr) -> syn::Result<(InFlight, Span)> {
        match value::literal(expr) {
            Some(Lit::Str(text)) if text.value() == AUTO => Ok((InFlight::Auto, text.span())),
            Some(Lit::Str(text)) => Err(syn::Error::new(
                text.span(),
                format_args!(
                    "`max_in_flight = {:?}` is not a limit; {IN_FLIGHT}",
                    text.value()
                ),
            )),
            Some(Lit::Int(_)) => {
                let (n, span) = Count::<u32>::NEW.parse(name, expr)?;
                Ok((InFlight::Fixed(n), span))
            }
            _ => Err(syn::Error::new_spanned(expr, IN_FLIGHT)),
        }
    }
}
