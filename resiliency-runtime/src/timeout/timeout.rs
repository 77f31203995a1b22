//! [`Timeout`]: a named time limit on calls, its `total` a setting that can change at run time.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::builder::TimeoutBuilder;
use super::future::TimeoutCall;
use super::meter::MeterCell;
use crate::rejected::FromRejected;

/// A time limit on calls: a call that has not answered within [`total`](Self::total) has its
/// body dropped and returns `Err(E::from(Rejected))` ([`Rejected::is_timeout`](crate::Rejected::is_timeout)).
///
/// Made by [`Timeout::builder`], by `#[timeout]` (one per site name) or by a
/// [`TimeoutLayer`](crate::tower::TimeoutLayer). See the [module docs](super).
pub struct Timeout {
    name: &'static str,
    /// `total` in ns: at least 1; `u64::MAX` is longer than any `Instant` counts, never.
    total_ns: AtomicU64,
    pub(super) metrics: MeterCell,
}

impl fmt::Debug for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("name", &self.name)
            .field("total", &self.total())
            .finish()
    }
}

impl Timeout {
    /// A builder for a time limit called `name` (the name its events, metrics and refusals carry).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::timeout::Timeout;
    ///
    /// let limit = Timeout::builder("search").total(Duration::from_millis(300)).build().unwrap();
    /// assert_eq!(limit.total(), Duration::from_millis(300));
    /// // `total` is required.
    /// let err = Timeout::builder("search").build().unwrap_err();
    /// assert!(err.to_string().contains("`total` is required"));
    /// ```
    pub fn builder(name: &'static str) -> TimeoutBuilder {
        TimeoutBuilder::new(name)
    }

    /// A time limit with no `total` yet (`apply` gives it one).
    pub(crate) const fn new(name: &'static str) -> Self {
        Timeout {
            name,
            total_ns: AtomicU64::new(u64::MAX),
            metrics: MeterCell::new(),
        }
    }

    /// Puts checked options in force: calls that start from now on get the new `total`.
    pub(crate) fn apply(&self, builder: &TimeoutBuilder) {
        let total = builder.options.total.map_or(u64::MAX, |total| {
            u64::try_from(total.as_nanos()).unwrap_or(u64::MAX)
        });
        self.total_ns.store(total.max(1), Relaxed);
    }

    /// The time limit's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// How long one call may take, as in force now (the settings by name may change it).
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.total_ns())
    }

    #[inline(always)]
    pub(super) fn total_ns(&self) -> u64 {
        self.total_ns.load(Relaxed)
    }

    /// Calls `body` under this time limit: if it has not answered within [`total`](Self::total)
    /// (counted from its first wait: a body that answers on its first poll reads no clock and
    /// makes no timer), the body is dropped and the call returns `Err(E::from(Rejected))`. The
    /// body reads its deadline with [`resiliency::deadline`](crate::deadline) and
    /// [`time_left`](crate::time_left).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::{timeout::Timeout, Rejected};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let limit = Timeout::builder("upstream").total(Duration::from_millis(100)).build().unwrap();
    /// let slow = limit.call(async {
    ///     tokio::time::sleep(Duration::from_secs(1)).await;
    ///     Ok::<_, Rejected>("late")
    /// });
    /// let err = slow.await.unwrap_err();
    /// assert!(err.is_timeout());
    /// assert_eq!(err.to_string(), "`upstream` did not answer within its time limit of 100ms");
    /// # }
    /// ```
    #[inline]
    pub fn call<T, E, F>(&self, body: F) -> TimeoutCall<'_, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        TimeoutCall::new(self, body)
    }
}
