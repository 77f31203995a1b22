//! Load shedding when the async runtime lags, as toobusy-js does for Node's event loop.
//!
//! This module holds the decision rules: [`Smoothing`] turns lag samples into a smoothed lag
//! (toobusy-js's exponential smoothing, by default with the fix of toobusy-js PR #17: samples
//! capped at `2 * max_lag` and fast recovery when the lag falls), and [`shed_probability`] turns the
//! smoothed lag into the share of calls to refuse (0 at `max_lag`, 1 at `2 * max_lag`).

mod rules;

pub use rules::{shed_probability, Recovery, Smoothing};
