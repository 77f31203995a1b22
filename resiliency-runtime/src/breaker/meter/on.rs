//! A breaker's series: its handles (one set per name, shared by a keyed family's breakers, whose
//! counts the exporter hands to the recorder) and the per-breaker part that keeps the state gauge
//! right as breakers come and go.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use ::metrics::{Counter, Gauge, Unit};

use crate::breaker::{Breaker, State};
use crate::metrics::{
    quietly, register, Count, Export, Sites, BREAKER_CALLS, BREAKER_STATE, BREAKER_TRANSITIONS,
};

const STATES: [State; 5] = [
    State::Closed,
    State::Open,
    State::HalfOpen,
    State::ForcedOpen,
    State::ForcedClosed,
];

fn index(state: State) -> usize {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
        State::ForcedOpen => 3,
        State::ForcedClosed => 4,
    }
}

/// A state as a label value.
fn label(state: State) -> &'static str {
    match state {
        State::Closed => "closed",
        State::Open => "open",
        State::HalfOpen => "half_open",
        State::ForcedOpen => "forced_open",
        State::ForcedClosed => "forced_closed",
    }
}

/// The series of every breaker called `name`: counts kept per core, handed to the recorder by
/// the exporter, and the state gauges, moved at each change.
pub(crate) struct BreakerMetrics {
    name: Arc<str>,
    success: Count,
    error: Count,
    ignored: Count,
    refused: Count,
    timed_out: Count,
    slow: Count,
    states: [Gauge; 5],
    /// `[from][to]`, registered at the first such change.
    transitions: [[OnceLock<Count>; 5]; 5],
}

static SITES: Sites<BreakerMetrics> = Sites::new();

fn describe() {
    ::metrics::describe_counter!(
        BREAKER_CALLS,
        Unit::Count,
        "Calls through a circuit breaker, by outcome: success, error, ignored (an error count_if did not count), refused, timed_out, slow (a success past slow_call_duration)."
    );
    ::metrics::describe_counter!(
        BREAKER_TRANSITIONS,
        Unit::Count,
        "Circuit breaker state changes, by from and to state."
    );
    ::metrics::describe_gauge!(
        BREAKER_STATE,
        Unit::Count,
        "Circuit breakers of this name in each state (for a keyed family, its keys in each state)."
    );
}

impl BreakerMetrics {
    fn new(name: &Arc<str>) -> Self {
        let calls = |outcome: &'static str| {
            Count::new(register(
                || ::metrics::counter!(BREAKER_CALLS, "name" => name.to_string(), "outcome" => outcome),
                Counter::noop,
            ))
        };
        BreakerMetrics {
            name: name.clone(),
            success: calls("success"),
            error: calls("error"),
            ignored: calls("ignored"),
            refused: calls("refused"),
            timed_out: calls("timed_out"),
            slow: calls("slow"),
            states: STATES.map(|state| {
                register(
                    || ::metrics::gauge!(BREAKER_STATE, "name" => name.to_string(), "state" => label(state)),
                    Gauge::noop,
                )
            }),
            transitions: Default::default(),
        }
    }

    #[cold]
    fn transition(&self, from: State, to: State) -> &Count {
        self.transitions[index(from)][index(to)].get_or_init(|| {
            Count::new(register(
                || {
                    ::metrics::counter!(
                        BREAKER_TRANSITIONS,
                        "name" => self.name.to_string(),
                        "from" => label(from),
                        "to" => label(to)
                    )
                },
                Counter::noop,
            ))
        })
    }
}

impl Export for BreakerMetrics {
    fn export(&self) {
        for count in [
            &self.success,
            &self.error,
            &self.ignored,
            &self.refused,
            &self.timed_out,
            &self.slow,
        ] {
            count.export();
        }
        for count in self.transitions.iter().flatten().filter_map(OnceLock::get) {
            count.export();
        }
    }
}

/// The series of every breaker of a name, shared by its handles.
pub(crate) type Handles = Arc<BreakerMetrics>;

/// The handles of every breaker called `name` (taken once per name, under a lock: a keyed
/// family takes them once for all its keys).
pub(crate) fn handles(name: &Arc<str>) -> Handles {
    SITES.get(name, describe, BreakerMetrics::new)
}

/// What one breaker holds: its name's handles, and whether it still counts in the state gauge.
pub(crate) struct Meter {
    site: Arc<BreakerMetrics>,
    /// True from creation until the breaker is evicted or dropped: it counts in one state.
    counted: AtomicBool,
}

impl Meter {
    /// The handles of breakers called `name`; this breaker counts as closed from now.
    pub(crate) fn new(name: &Arc<str>) -> Self {
        Meter::of(handles(name))
    }

    /// A breaker of the family whose handles are `site`; it counts as closed from now.
    pub(crate) fn of(site: Arc<BreakerMetrics>) -> Self {
        quietly(|| site.states[index(State::Closed)].increment(1.0));
        Meter {
            site,
            counted: AtomicBool::new(true),
        }
    }

    #[inline(always)]
    pub(crate) fn success(&self) {
        self.site.success.add();
    }

    #[inline(always)]
    pub(crate) fn error(&self) {
        self.site.error.add();
    }

    #[inline(always)]
    pub(crate) fn ignored(&self) {
        self.site.ignored.add();
    }

    #[inline(always)]
    pub(crate) fn refused(&self) {
        self.site.refused.add();
    }

    #[inline(always)]
    pub(crate) fn timed_out(&self) {
        self.site.timed_out.add();
    }

    pub(crate) fn slow(&self) {
        self.site.slow.add();
    }

    /// The breaker changed from `from` to `to` (announced once per change, after it is made).
    pub(crate) fn changed(&self, from: State, to: State) {
        let site = &*self.site;
        site.transition(from, to).add();
        quietly(|| {
            if self.counted.load(Relaxed) {
                site.states[index(from)].decrement(1.0);
                site.states[index(to)].increment(1.0);
            }
        });
    }

    /// The breaker, in `state`, stops counting (evicted from its family, or dropped).
    fn forget(&self, state: State) {
        if self.counted.swap(false, Relaxed) {
            quietly(|| self.site.states[index(state)].decrement(1.0));
        }
    }
}

impl Breaker {
    /// The breaker leaves its family's state gauge: it was evicted. (Dropping it would do the
    /// same, but an evicted breaker's memory is reclaimed later.)
    pub(crate) fn uncount(&self) {
        self.meter.forget(self.announced());
    }
}

// The `cfg` repeats the module's: rustdoc marks this impl (listed on `Breaker`'s page) with its
// feature on the facade's pages, built from this crate's metadata, only from the impl's own.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
impl Drop for Breaker {
    fn drop(&mut self) {
        self.uncount();
    }
}
