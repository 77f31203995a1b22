//! What judges a raced call's errors: whether one is worth another attempt ([`Retryable`]:
//! [`Always`], a `retry_if` predicate), and how long its upstream asked callers to wait
//! ([`Hinted`]).

use std::time::Duration;

/// The default `retry_if`: every error is worth another attempt.
#[derive(Copy, Clone, Debug, Default)]
pub struct Always;

/// Whether an error is worth another attempt, and how long its upstream asked callers to wait
/// before the next one.
pub trait Retryable<E> {
    /// True when another attempt may succeed where this one failed.
    fn retryable(&self, error: &E) -> bool;

    /// The wait the upstream asked for with `error` ([`RetryHint`](crate::RetryHint)), if any:
    /// the next attempt starts no sooner.
    fn retry_after(&self, _error: &E) -> Option<Duration> {
        None
    }
}

/// A `retry_if` predicate (or [`Always`]) with a reader of each error's
/// [`RetryHint`](crate::RetryHint): see [`RaceRetry::run_hinted`](super::RaceRetry::run_hinted).
#[derive(Clone, Copy, Debug)]
pub struct Hinted<P, H> {
    pub(crate) retryable: P,
    pub(crate) hint: H,
}

impl<P, H> Hinted<P, H> {
    pub(crate) fn new(retryable: P, hint: H) -> Self {
        Hinted { retryable, hint }
    }
}

impl<E, P, H> Retryable<E> for Hinted<P, H>
where
    P: Retryable<E>,
    H: Fn(&E) -> Option<Duration>,
{
    #[inline(always)]
    fn retryable(&self, error: &E) -> bool {
        self.retryable.retryable(error)
    }

    fn retry_after(&self, error: &E) -> Option<Duration> {
        (self.hint)(error)
    }
}

impl<E> Retryable<E> for Always {
    #[inline(always)]
    fn retryable(&self, _: &E) -> bool {
        true
    }
}

impl<E, P: Fn(&E) -> bool> Retryable<E> for P {
    fn retryable(&self, error: &E) -> bool {
        self(error)
    }
}
