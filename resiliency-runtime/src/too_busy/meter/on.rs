//! A `#[too_busy]` guard's series with the `metrics` feature (one set per name, made at the
//! guard's first call: counts, the in-flight level and durations kept per core, handed to the
//! recorder by the exporter; the limit gauge set at each change), and the runtime's lag gauge.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::metrics::{Counter, Gauge, Histogram, Unit};

use crate::metrics::{
    quietly, register, Cell, Count, Export, Level, Named, Samples, Sites, TOO_BUSY_CALLS,
    TOO_BUSY_CALL_DURATION, TOO_BUSY_IN_FLIGHT, TOO_BUSY_IN_FLIGHT_LIMIT, TOO_BUSY_LAG,
    TOO_BUSY_REFUSED,
};
use crate::rejected::BusySignal;

/// The series of every guard called `name`.
pub(crate) struct Meter {
    admitted: Count,
    refused: Count,
    by_lag: Count,
    by_in_flight: Count,
    by_latency: Count,
    in_flight: Level,
    /// Registered at the first limit: a guard that never had one exports no limit.
    limit: OnceLock<Gauge>,
    name: Arc<str>,
    duration: Samples,
}

/// A guard's handles, made at its first use.
pub(crate) type MeterCell = Cell<Meter>;

static SITES: Sites<Meter> = Sites::new();

fn describe() {
    ::metrics::describe_counter!(
        TOO_BUSY_CALLS,
        Unit::Count,
        "Calls through a too_busy guard, by outcome: admitted, refused."
    );
    ::metrics::describe_counter!(
        TOO_BUSY_REFUSED,
        Unit::Count,
        "Calls a too_busy guard refused, by the signal that refused: lag, in_flight, latency."
    );
    ::metrics::describe_gauge!(
        TOO_BUSY_IN_FLIGHT,
        Unit::Count,
        "Calls running through too_busy guards with max_in_flight."
    );
    ::metrics::describe_gauge!(
        TOO_BUSY_IN_FLIGHT_LIMIT,
        Unit::Count,
        "The max_in_flight of a too_busy guard in force; with max_in_flight = \"auto\", the limit learned."
    );
    ::metrics::describe_histogram!(
        TOO_BUSY_CALL_DURATION,
        Unit::Seconds,
        "How long admitted calls ran, for too_busy guards with max_latency."
    );
}

impl Meter {
    /// Whether these methods report anything.
    pub(crate) const ON: bool = true;

    fn new(name: &Arc<str>) -> Self {
        let counter = |series: &'static str, key: &'static str, value: &'static str| {
            Count::new(register(
                || ::metrics::counter!(series, "name" => name.to_string(), key => value),
                Counter::noop,
            ))
        };
        Meter {
            admitted: counter(TOO_BUSY_CALLS, "outcome", "admitted"),
            refused: counter(TOO_BUSY_CALLS, "outcome", "refused"),
            by_lag: counter(TOO_BUSY_REFUSED, "signal", "lag"),
            by_in_flight: counter(TOO_BUSY_REFUSED, "signal", "in_flight"),
            by_latency: counter(TOO_BUSY_REFUSED, "signal", "latency"),
            in_flight: Level::new(register(
                || ::metrics::gauge!(TOO_BUSY_IN_FLIGHT, "name" => name.to_string()),
                Gauge::noop,
            )),
            limit: OnceLock::new(),
            name: name.clone(),
            duration: Samples::new(register(
                || ::metrics::histogram!(TOO_BUSY_CALL_DURATION, "name" => name.to_string()),
                Histogram::noop,
            )),
        }
    }

    /// A call was admitted; `counted` when it took a `max_in_flight` slot.
    #[inline(always)]
    pub(crate) fn admitted(&self, counted: bool) {
        self.admitted.add();
        if counted {
            self.in_flight.up();
        }
    }

    /// A call was refused by `signal`.
    pub(crate) fn refused(&self, signal: &BusySignal) {
        self.refused.add();
        match signal {
            BusySignal::Lag { .. } => &self.by_lag,
            BusySignal::InFlight { .. } => &self.by_in_flight,
            BusySignal::Latency { .. } => &self.by_latency,
        }
        .add();
    }

    /// A call gave its `max_in_flight` slot back.
    #[inline(always)]
    pub(crate) fn left(&self) {
        self.in_flight.down();
    }

    /// The `max_in_flight` in force is `limit` (0: none). The gauge is registered at the first
    /// limit; a guard whose limit is then switched off has no value, NaN (not 0, a limit that
    /// refuses everything).
    pub(crate) fn limit(&self, limit: u32) {
        let gauge = if limit == 0 {
            self.limit.get()
        } else {
            Some(self.limit.get_or_init(|| {
                register(
                    || ::metrics::gauge!(TOO_BUSY_IN_FLIGHT_LIMIT, "name" => self.name.to_string()),
                    Gauge::noop,
                )
            }))
        };
        if let Some(gauge) = gauge {
            let value = if limit == 0 {
                f64::NAN
            } else {
                f64::from(limit)
            };
            quietly(|| gauge.set(value));
        }
    }

    /// An admitted call ran `ns` nanoseconds (measured with `max_latency`).
    #[inline(always)]
    pub(crate) fn ran(&self, ns: f64) {
        self.duration.record(ns / 1e9);
    }
}

static LAG: OnceLock<Gauge> = OnceLock::new();

/// A lag monitor sampled: `lag` is the smoothed lag.
pub(crate) fn lag(lag: Duration) {
    let gauge = LAG.get_or_init(|| {
        quietly(|| {
            ::metrics::describe_gauge!(
                TOO_BUSY_LAG,
                Unit::Seconds,
                "The async runtime's smoothed lag, as too_busy guards see it."
            )
        });
        register(|| ::metrics::gauge!(TOO_BUSY_LAG), Gauge::noop)
    });
    quietly(|| gauge.set(lag.as_secs_f64()));
}

impl Export for Meter {
    fn export(&self) {
        for count in [
            &self.admitted,
            &self.refused,
            &self.by_lag,
            &self.by_in_flight,
            &self.by_latency,
        ] {
            count.export();
        }
        self.in_flight.export();
        self.duration.export();
    }
}

impl Named for Meter {
    /// The handles of the guards called `name`, made at the first use of one.
    fn handles(name: &str) -> Arc<Self> {
        SITES.get(name, describe, Meter::new)
    }
}
