//! The arguments of `#[too_busy(...)]`, each kept with its span; each is a literal or an
//! expression (`OrExpr`). `valid` checks the shared rules on the literals.

use proc_macro2::Span;
use syn::{Expr, Lit, LitStr};

use crate::driver::arguments;
use crate::value::{self, Count, Duration, Or, OrExpr, Str, Value};

arguments! {
    /// `#[too_busy(...)]`'s arguments, in the order of its documentation.
    pub(crate) struct TooBusy {
        name: LitStr = Str("payments"),
        max_lag: OrExpr<std::time::Duration> = Or(Duration),
        max_in_flight: OrExpr<InFlight> = Or(InFlightValue),
        auto_min: OrExpr<u32> = Or(Count::NEW),
        auto_max: OrExpr<u32> = Or(Count::NEW),
        auto_initial: OrExpr<u32> = Or(Count::NEW),
        max_latency: OrExpr<std::time::Duration> = Or(Duration),
    }
}

/// The limit on calls in flight: a number, or learned.
#[derive(Copy, Clone)]
pub(crate) enum InFlight {
    Fixed(u32),
    Auto,
}

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
