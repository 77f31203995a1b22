//! Most of the integration tests, one module each, in one binary: what a user sees of each
//! policy and of their seams, on paused clocks or with nothing process-wide at stake.
//! `tests/README.md` lists the modules and the binaries kept apart (and why).

#[path = "../support/mod.rs"]
mod support;

mod attribute_exprs;
mod blocking;
mod breaker_adversarial;
mod breaker_api;
mod breaker_capacity;
mod breaker_closed;
mod breaker_keyed;
mod breaker_model;
mod breaker_names;
mod breaker_rules;
mod breaker_slow_calls;
mod builders;
mod deadline;
mod fallback;
mod http_refusals;
mod msrv;
#[cfg(feature = "tower")]
mod one_registry;
mod race_retry;
mod race_retry_attempts;
mod rate_limit;
mod refusals_found;
mod refusals_yield;
mod retry_after;
#[cfg(all(feature = "tower", feature = "toml"))]
mod seams_found;
mod shapes_axum;
mod shapes_breaker;
mod shapes_common;
mod shapes_race_retry;
mod shapes_rate_limit;
mod shapes_timeout;
mod shapes_too_busy;
mod timeout;
mod too_busy_auto;
mod too_busy_free;
#[cfg(feature = "tower")]
mod tower_breaker;
#[cfg(all(feature = "tower", feature = "axum"))]
mod tower_http;
#[cfg(feature = "tower")]
mod tower_race;
#[cfg(feature = "tower")]
mod tower_too_busy;
