//! A rate limit's series with the `metrics` feature: one set per name, made at its first call,
//! counts kept per core and handed to the recorder by the exporter.

use std::sync::Arc;

use ::metrics::{Counter, Unit};

use crate::metrics::{register, Cell, Count, Export, Named, Sites, RATE_LIMIT_CALLS};

/// The series of every rate limit called `name`.
pub(crate) struct Meter {
    admitted: Count,
    waited: Count,
    refused: Count,
}

/// A rate limit's handles, made at its first call.
pub(crate) type MeterCell = Cell<Meter>;

static SITES: Sites<Meter> = Sites::new();

fn describe() {
    ::metrics::describe_counter!(
        RATE_LIMIT_CALLS,
        Unit::Count,
        "Calls through a rate limit, by outcome: admitted, waited, refused."
    );
}

impl Meter {
    fn new(name: &Arc<str>) -> Self {
        let counter = |outcome: &'static str| {
            Count::new(register(
                || ::metrics::counter!(RATE_LIMIT_CALLS, "name" => name.to_string(), "outcome" => outcome),
                Counter::noop,
            ))
        };
        Meter {
            admitted: counter("admitted"),
            waited: counter("waited"),
            refused: counter("refused"),
        }
    }

    /// A call was admitted at once.
    #[inline(always)]
    pub(crate) fn admitted(&self) {
        self.admitted.add();
    }

    /// A call was admitted after waiting for its permit.
    pub(crate) fn waited(&self) {
        self.waited.add();
    }

    /// A call was refused.
    pub(crate) fn refused(&self) {
        self.refused.add();
    }
}

impl Export for Meter {
    fn export(&self) {
        self.admitted.export();
        self.waited.export();
        self.refused.export();
    }
}

impl Named for Meter {
    /// The handles of the rate limits called `name`, made at the first call of one.
    fn handles(name: &str) -> Arc<Self> {
        SITES.get(name, describe, Meter::new)
    }
}
