//! A raced function's series with the `metrics` feature (one set per name, made at its first
//! call): counts kept per core and samples buffered per core, handed to the recorder by the
//! exporter.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::metrics::{Counter, Histogram, Unit};

use crate::metrics::{
    register, Cell, Count, Export, Named, Samples, Sites, Striped, RACE_ATTEMPTS,
    RACE_ATTEMPT_DURATION, RACE_BUDGET_REFUSED, RACE_CALLS, RACE_WINS,
};
use crate::race_retry::MAX_RETRIES;

/// Attempt numbers a call can have: 1 to `MAX_RETRIES + 1`.
const ATTEMPTS: usize = MAX_RETRIES as usize + 1;

/// The series of every raced function called `name`.
pub(crate) struct Meter {
    name: Arc<str>,
    success: Count,
    error: Count,
    deadline: Count,
    attempts: Count,
    budget_refused: Count,
    duration: Samples,
    /// By the number of the attempt that won, less one; registered at its first win.
    wins: [OnceLock<Count>; ATTEMPTS],
    /// Calls whose attempt 1 answered at its first poll, the common case: one add, where
    /// counting it in `attempts`, `success` and the wins of attempt 1 would take three. Those
    /// three are exported with it added (and are counted without it otherwise).
    at_once: Striped,
}

/// A raced function's handles, made at its first use.
pub(crate) type MeterCell = Cell<Meter>;

static SITES: Sites<Meter> = Sites::new();

fn describe() {
    ::metrics::describe_counter!(
        RACE_CALLS,
        Unit::Count,
        "Raced calls that returned, by outcome: success, error, deadline."
    );
    ::metrics::describe_counter!(
        RACE_ATTEMPTS,
        Unit::Count,
        "Attempts started by raced calls, the first included."
    );
    ::metrics::describe_counter!(
        RACE_WINS,
        Unit::Count,
        "Successful raced calls, by the number of the attempt that won."
    );
    ::metrics::describe_counter!(
        RACE_BUDGET_REFUSED,
        Unit::Count,
        "Extra attempts the retry budget did not allow."
    );
    ::metrics::describe_histogram!(
        RACE_ATTEMPT_DURATION,
        Unit::Seconds,
        "How long timed attempts ran, losers included."
    );
}

impl Meter {
    fn new(name: &Arc<str>) -> Self {
        let calls = |outcome: &'static str| {
            Count::new(register(
                || ::metrics::counter!(RACE_CALLS, "name" => name.to_string(), "outcome" => outcome),
                Counter::noop,
            ))
        };
        Meter {
            name: name.clone(),
            success: calls("success"),
            error: calls("error"),
            deadline: calls("deadline"),
            attempts: Count::new(register(
                || ::metrics::counter!(RACE_ATTEMPTS, "name" => name.to_string()),
                Counter::noop,
            )),
            budget_refused: Count::new(register(
                || ::metrics::counter!(RACE_BUDGET_REFUSED, "name" => name.to_string()),
                Counter::noop,
            )),
            duration: Samples::new(register(
                || ::metrics::histogram!(RACE_ATTEMPT_DURATION, "name" => name.to_string()),
                Histogram::noop,
            )),
            wins: std::array::from_fn(|_| OnceLock::new()),
            at_once: Striped::new(),
        }
    }

    /// The call succeeded at attempt 1's first poll: an attempt started, a success, a win of
    /// attempt 1, counted as one.
    #[inline(always)]
    pub(crate) fn answered_at_once(&self) {
        self.at_once.add(1);
    }

    /// An attempt started.
    #[inline(always)]
    pub(crate) fn started(&self) {
        self.attempts.add();
    }

    /// The call succeeded: attempt `number` won.
    #[inline(always)]
    pub(crate) fn won(&self, number: u32) {
        self.success.add();
        self.wins(number).add();
    }

    #[inline(always)]
    fn wins(&self, number: u32) -> &Count {
        let at = (number.max(1) as usize - 1).min(ATTEMPTS - 1);
        match self.wins[at].get() {
            Some(counter) => counter,
            None => self.register_wins(at),
        }
    }

    #[cold]
    fn register_wins(&self, at: usize) -> &Count {
        self.wins[at].get_or_init(|| {
            Count::new(register(
                || {
                    ::metrics::counter!(
                        RACE_WINS,
                        "name" => self.name.to_string(),
                        "attempt" => (at + 1).to_string()
                    )
                },
                Counter::noop,
            ))
        })
    }

    /// The call returned an error: `deadline` when it is the deadline's refusal.
    pub(crate) fn failed(&self, deadline: bool) {
        if deadline {
            &self.deadline
        } else {
            &self.error
        }
        .add();
    }

    /// The budget refused an extra attempt.
    pub(crate) fn budget_refused(&self) {
        self.budget_refused.add();
    }

    /// A timed attempt ran `elapsed`.
    pub(crate) fn ran(&self, elapsed: Duration) {
        self.duration.record(elapsed.as_secs_f64());
    }
}

impl Export for Meter {
    fn export(&self) {
        // Read once, for the three series it adds to, so that they agree.
        let at_once = self.at_once.total();
        if at_once > 0 {
            self.wins(1); // registered, as at a first win
        }
        self.success.export_with(at_once);
        self.attempts.export_with(at_once);
        for count in [&self.error, &self.deadline, &self.budget_refused] {
            count.export();
        }
        for (at, count) in self.wins.iter().enumerate() {
            if let Some(count) = count.get() {
                count.export_with(if at == 0 { at_once } else { 0 });
            }
        }
        self.duration.export();
    }
}

impl Named for Meter {
    /// The handles of the raced functions called `name`, made at the first use of one.
    fn handles(name: &str) -> Arc<Self> {
        SITES.get(name, describe, Meter::new)
    }
}
