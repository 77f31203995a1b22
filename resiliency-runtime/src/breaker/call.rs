//! The calls a [`Breaker`] offers from code ([`Breaker::call`], [`Breaker::call_if`],
//! [`Breaker::call_hinted`]), each a [`BreakerCall`], and the predicate and hint reader of the
//! calls that take none.

use std::future::Future;
use std::time::Duration;

use super::breaker::Breaker;
use super::future::BreakerCall;
use crate::rejected::Rejected;
use crate::RetryHint;

impl Breaker {
    /// Runs `body` through the breaker: refused with [`Rejected`] while open, bounded by
    /// `timeout`, and every error counts. See [`call_if`](Self::call_if) to count only some
    /// errors.
    ///
    /// The returned future asks the breaker for admission when it is first polled, and records
    /// the outcome when the body completes; dropped before that, it frees its probe slot without
    /// counting.
    pub fn call<F, T, E>(&self, body: F) -> BreakerCall<&Self, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: From<Rejected>,
    {
        BreakerCall::new(self, body, every_error::<E>, no_hint::<E>)
    }

    /// Like [`call`](Self::call), but an error counts only when `counts(&error)` is true. An error
    /// that does not count is neither a failure nor a success: it leaves the window as it was (and
    /// frees its probe slot when half-open).
    pub fn call_if<F, T, E, P>(&self, counts: P, body: F) -> BreakerCall<&Self, F, E, P>
    where
        F: Future<Output = Result<T, E>>,
        E: From<Rejected>,
        P: FnMut(&E) -> bool,
    {
        BreakerCall::new(self, body, counts, no_hint::<E>)
    }

    /// Like [`call`](Self::call), for errors that say how long their upstream asked callers to
    /// wait ([`RetryHint`](crate::RetryHint), such as an HTTP `Retry-After`): should the breaker
    /// open (at such an error, or at a later one while the wait lasts), it stays open at least
    /// that long, up to `max_error_timeout` (by default a multiple of `error_timeout`: see
    /// [`BreakerBuilder::max_error_timeout`](crate::BreakerBuilder::max_error_timeout)).
    /// `#[breaker]` reads the hint of every error type that implements the trait by itself.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::{Breaker, Rejected, RetryHint};
    ///
    /// #[derive(Debug)]
    /// enum ApiError {
    ///     Throttled(Duration), // a 429 or 503 with `Retry-After`
    ///     Refused(Rejected),
    /// }
    ///
    /// impl From<Rejected> for ApiError {
    ///     fn from(rejected: Rejected) -> Self {
    ///         ApiError::Refused(rejected)
    ///     }
    /// }
    ///
    /// impl RetryHint for ApiError {
    ///     fn retry_after(&self) -> Option<Duration> {
    ///         match self {
    ///             ApiError::Throttled(wait) => Some(*wait),
    ///             ApiError::Refused(rejected) => rejected.retry_after(),
    ///         }
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let breaker = Breaker::builder("docs-hinted")
    ///     .error_threshold(1)
    ///     .error_timeout(Duration::from_secs(5))
    ///     .build()
    ///     .unwrap();
    /// let throttled = breaker
    ///     .call_hinted(async { Err::<(), _>(ApiError::Throttled(Duration::from_secs(30))) })
    ///     .await;
    /// assert!(throttled.is_err());
    /// // Open for the 30 s the upstream asked for, not the 5 s of `error_timeout`.
    /// let refused = breaker.call_hinted(async { Ok::<(), ApiError>(()) }).await.unwrap_err();
    /// let ApiError::Refused(rejected) = refused else { unreachable!() };
    /// assert_eq!(rejected.retry_after(), Some(Duration::from_secs(30)));
    /// # }
    /// ```
    pub fn call_hinted<F, T, E>(&self, body: F) -> BreakerCall<&Self, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: From<Rejected> + RetryHint,
    {
        BreakerCall::new(self, body, every_error::<E>, <E as RetryHint>::retry_after)
    }
}

/// The predicate of [`Breaker::call`] (and of a `#[breaker]` without `count_if`): every error
/// counts.
#[doc(hidden)]
pub fn every_error<E>(_: &E) -> bool {
    true
}

/// No hint: the `RetryHint` reader of [`Breaker::call`] and [`Breaker::call_if`] (and of a
/// `#[breaker]` fn whose return type cannot be named).
#[doc(hidden)]
pub fn no_hint<E>(_: &E) -> Option<Duration> {
    None
}
