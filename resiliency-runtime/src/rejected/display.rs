//! How a [`Rejected`] reads: its Display (what was refused and why, with the site's name and the
//! numbers behind it, durations rounded), and its Debug.

use std::fmt;
use std::time::Duration;

use super::{BusySignal, Reason, Rejected};

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.reason {
            Reason::Open { circuit, retry_in } => {
                write!(
                    f,
                    "{circuit} is open; it half-opens in {}",
                    Rounded(*retry_in)
                )
            }
            Reason::ForcedOpen { circuit } => write!(f, "{circuit} is forced open"),
            Reason::ProbesBusy { circuit } => {
                write!(
                    f,
                    "{circuit} is half-open and its probe calls are in flight"
                )
            }
            Reason::Timeout { circuit, after } => {
                write!(
                    f,
                    "call through {circuit} timed out after {}",
                    Rounded(*after)
                )
            }
            Reason::Deadline {
                name,
                total,
                attempts,
            } => {
                let s = if *attempts == 1 { "" } else { "s" };
                write!(
                    f,
                    "`{name}` found no answer within its deadline of {} ({attempts} attempt{s})",
                    Rounded(*total)
                )
            }
            Reason::RateLimited {
                name,
                rate,
                retry_after,
            } => write!(
                f,
                "`{name}` is over its rate limit of {rate}; the next permit frees in {}",
                Rounded(*retry_after)
            ),
            Reason::Elapsed { name, total } => write!(
                f,
                "`{name}` did not answer within its time limit of {}",
                Rounded(*total)
            ),
            Reason::AttemptTimeout { name, each } => write!(
                f,
                "the last attempt of `{name}` ran past its limit of {} per attempt",
                Rounded(*each)
            ),
            Reason::TooBusy { name, signal } => {
                write!(f, "`{name}` is too busy: ")?;
                match signal {
                    BusySignal::Lag { lag, max_lag } => write!(
                        f,
                        "the runtime lags {} (max_lag {})",
                        Rounded(*lag),
                        Rounded(*max_lag)
                    ),
                    BusySignal::InFlight { limit: 1, auto } => write!(
                        f,
                        "1 call is in flight (max_in_flight {})",
                        if *auto { "auto, now 1" } else { "1" }
                    ),
                    BusySignal::InFlight { limit, auto: false } => {
                        write!(f, "{limit} calls are in flight (max_in_flight {limit})")
                    }
                    BusySignal::InFlight { limit, auto: true } => write!(
                        f,
                        "{limit} calls are in flight (max_in_flight auto, now {limit})"
                    ),
                    BusySignal::Latency { mean, max_latency } => write!(
                        f,
                        "recent calls took {} on average (max_latency {})",
                        Rounded(*mean),
                        Rounded(*max_latency)
                    ),
                }
            }
        }
    }
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("kind", &self.kind())
            .field("message", &format_args!("{self}"))
            .finish()
    }
}

impl std::error::Error for Rejected {}

/// A duration rounded for messages: "799ms", "4.99s", "250us" (the exact value stays available).
pub(crate) struct Rounded(pub(crate) Duration);

impl fmt::Display for Rounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        if nanos >= 1_000_000_000 {
            write!(f, "{}s", trim(format!("{:.2}", self.0.as_secs_f64())))
        } else if nanos >= 1_000_000 {
            write!(f, "{}ms", nanos / 1_000_000)
        } else if nanos >= 1_000 {
            write!(f, "{}us", nanos / 1_000)
        } else {
            write!(f, "{nanos}ns")
        }
    }
}

fn trim(mut s: String) -> String {
    while s.contains('.') && (s.ends_with('0') || s.ends_with('.')) {
        s.pop();
    }
    s
}
