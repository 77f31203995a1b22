//! How a [`BreakerLayer`](super::BreakerLayer) judges an inner service's outcome: the
//! [`Classify`] trait and its three implementations.

use std::fmt;

#[cfg(doc)]
use super::BreakerLayer;

/// Whether an inner service's outcome counts as a failure for the breaker.
///
/// Implemented by [`AnyError`] (the default: every `Err`, no `Ok`), [`ServerErrors`] (an `Err`
/// or an `http::Response` whose status is 5xx), and [`FailureIf`] (a closure, from
/// [`BreakerLayer::failure_if`]). An outcome that is not a failure counts as a success.
pub trait Classify<Res, Err> {
    /// True when `outcome` counts as a failure.
    fn is_failure(&self, outcome: &Result<Res, Err>) -> bool;

    /// How long the upstream asked callers to wait with `outcome` (a failure), if it said: the
    /// breaker stays open at least that long should it open (see
    /// [`Breaker::call_hinted`](crate::Breaker::call_hinted)). None by default; [`ServerErrors`]
    /// reads a response's `Retry-After` header.
    fn retry_after(&self, _outcome: &Result<Res, Err>) -> Option<std::time::Duration> {
        None
    }
}

/// The default classification: an `Err` is a failure, an `Ok` is a success.
#[derive(Copy, Clone, Debug, Default)]
pub struct AnyError;

impl<Res, Err> Classify<Res, Err> for AnyError {
    fn is_failure(&self, outcome: &Result<Res, Err>) -> bool {
        outcome.is_err()
    }
}

/// HTTP classification ([`BreakerLayer::http_server_errors`]): an `Err`, or a response whose
/// status is a server error (5xx), is a failure; 4xx responses are the caller's doing and count as
/// successes.
#[derive(Copy, Clone, Debug, Default)]
pub struct ServerErrors;

impl<B, Err> Classify<http::Response<B>, Err> for ServerErrors {
    fn is_failure(&self, outcome: &Result<http::Response<B>, Err>) -> bool {
        server_errors(outcome)
    }

    /// A response's `Retry-After` (a 503 or 429 saying when to come back).
    fn retry_after(&self, outcome: &Result<http::Response<B>, Err>) -> Option<std::time::Duration> {
        outcome
            .as_ref()
            .ok()
            .and_then(crate::RetryHint::retry_after)
    }
}

/// An `Err`, or a response whose status is 5xx: what [`ServerErrors`] counts, as a function to
/// call from your own classifier.
///
/// ```
/// use resiliency::tower::server_errors;
///
/// let bad: Result<_, ()> = Ok(http::Response::builder().status(503).body(()).unwrap());
/// let fine: Result<_, ()> = Ok(http::Response::builder().status(404).body(()).unwrap());
/// assert!(server_errors(&bad) && !server_errors(&fine) && server_errors::<(), _>(&Err(())));
/// ```
pub fn server_errors<B, Err>(outcome: &Result<http::Response<B>, Err>) -> bool {
    match outcome {
        Ok(response) => response.status().is_server_error(),
        Err(_) => true,
    }
}

/// A closure that classifies outcomes ([`BreakerLayer::failure_if`]): true is a failure.
#[derive(Copy, Clone)]
pub struct FailureIf<F>(pub(crate) F);

impl<F> fmt::Debug for FailureIf<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FailureIf")
    }
}

impl<Res, Err, F: Fn(&Result<Res, Err>) -> bool> Classify<Res, Err> for FailureIf<F> {
    fn is_failure(&self, outcome: &Result<Res, Err>) -> bool {
        (self.0)(outcome)
    }
}
