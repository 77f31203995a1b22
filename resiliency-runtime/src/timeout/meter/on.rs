//! A time limit's series with the `metrics` feature: one set per name, made at its first call,
//! counts kept per core and handed to the recorder by the exporter.

use std::sync::Arc;

use ::metrics::{Counter, Unit};

use crate::metrics::{register, Cell, Count, Export, Named, Sites, TIMEOUT_CALLS};

/// The series of every time limit called `name`.
pub(crate) struct Meter {
    completed: Count,
    timed_out: Count,
}

/// A time limit's handles, made at its first call.
pub(crate) type MeterCell = Cell<Meter>;

static SITES: Sites<Meter> = Sites::new();

fn describe() {
    ::metrics::describe_counter!(
        TIMEOUT_CALLS,
        Unit::Count,
        "Calls under a time limit that ended, by outcome: completed, timed_out."
    );
}

impl Meter {
    fn new(name: &Arc<str>) -> Self {
        let counter = |outcome: &'static str| {
            Count::new(register(
                || ::metrics::counter!(TIMEOUT_CALLS, "name" => name.to_string(), "outcome" => outcome),
                Counter::noop,
            ))
        };
        Meter {
            completed: counter("completed"),
            timed_out: counter("timed_out"),
        }
    }

    /// A call answered (`Ok` or `Err`) within its time.
    #[inline(always)]
    pub(crate) fn completed(&self) {
        self.completed.add();
    }

    /// A call ran out of time.
    pub(crate) fn timed_out(&self) {
        self.timed_out.add();
    }
}

impl Export for Meter {
    fn export(&self) {
        self.completed.export();
        self.timed_out.export();
    }
}

impl Named for Meter {
    /// The handles of the time limits called `name`, made at the first call of one.
    fn handles(name: &str) -> Arc<Self> {
        SITES.get(name, describe, Meter::new)
    }
}
