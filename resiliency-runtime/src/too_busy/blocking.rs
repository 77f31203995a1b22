//! Calls of a blocking closure through a guard: `max_in_flight` and `max_latency` as for an
//! async call, on the caller's thread; the runtime's lag is not looked at.

use super::admission::Held;
use super::too_busy::{Refuse, TooBusy};

impl TooBusy {
    /// Runs the blocking `body` on the caller's thread unless `max_in_flight` or `max_latency`
    /// refuses it; a refused call returns `R::refused(Rejected)` at once, without running `body`.
    ///
    /// The call holds its `max_in_flight` slot until `body` returns or panics (the panic goes on
    /// to the caller, the slot comes back), and the time it ran counts toward `max_latency`,
    /// measured with the clock async calls use (tokio's `Instant`). The slots and the latency are
    /// shared with the guard's async calls.
    ///
    /// The runtime's lag can only be measured by an async runtime, so a blocking call ignores
    /// `max_lag`: a guard whose only signal is the lag (one built with neither `max_in_flight`
    /// nor `max_latency`) admits every blocking call. `#[too_busy]` on a blocking fn therefore
    /// needs `max_in_flight` or `max_latency`, and refuses `max_lag`. No tokio runtime is needed.
    ///
    /// ```
    /// use std::sync::LazyLock;
    /// use resiliency::{too_busy::TooBusy, Rejected};
    ///
    /// static GUARD: LazyLock<TooBusy> =
    ///     LazyLock::new(|| TooBusy::builder("render").max_in_flight(1).build().unwrap());
    ///
    /// let outer = GUARD.call_blocking(|| {
    ///     // The one slot is held: a call made meanwhile is refused at once.
    ///     let inner = GUARD.call_blocking(|| Ok::<_, Rejected>(2));
    ///     assert!(inner.unwrap_err().is_too_busy());
    ///     Ok::<_, Rejected>(1)
    /// });
    /// assert_eq!(outer.unwrap(), 1);
    /// assert_eq!(GUARD.in_flight(), 0);
    /// ```
    pub fn call_blocking<R, F>(&self, body: F) -> R
    where
        F: FnOnce() -> R,
        R: Refuse,
    {
        let held = match self.admit_slow(None, 0, self.limits()) {
            Ok(held) => held,
            Err(rejected) => return R::refused(self.refused(rejected)),
        };
        self.meter().admitted(held.slot);
        let mut holding = Holding {
            guard: self,
            held,
            failed: true,
        };
        let output = body();
        holding.failed = output.failed();
        drop(holding);
        output
    }
}

/// An admitted blocking call's hold: given back when the body returns, or while it unwinds.
struct Holding<'a> {
    guard: &'a TooBusy,
    held: Held,
    /// Until the body returned: it panicked.
    failed: bool,
}

impl Drop for Holding<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.guard.done(self.held, self.failed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::too_busy::TooBusy;
    use crate::Rejected;

    #[test]
    fn a_panicking_body_gives_its_slot_back() {
        let guard = TooBusy::builder("blocking-unit")
            .max_in_flight(1)
            .build()
            .unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guard.call_blocking(|| -> Result<(), Rejected> { panic!("body") })
        }));
        assert!(panicked.is_err());
        assert_eq!(guard.in_flight(), 0);
        assert_eq!(guard.call_blocking(|| Ok::<_, Rejected>(1)).unwrap(), 1);
    }

    #[test]
    fn lag_alone_admits_every_blocking_call() {
        let guard = TooBusy::builder("blocking-lag")
            .max_lag(Duration::from_millis(1))
            .build()
            .unwrap();
        assert_eq!(guard.call_blocking(|| Ok::<_, Rejected>(1)).unwrap(), 1);
    }

    #[test]
    fn max_latency_sheds_slow_blocking_calls() {
        let guard = TooBusy::builder("blocking-latency")
            .max_latency(Duration::from_millis(1))
            .build()
            .unwrap();
        let slow = || {
            std::thread::sleep(Duration::from_millis(5));
            Ok::<_, Rejected>(())
        };
        guard.call_blocking(slow).unwrap();
        assert!(guard.recent_latency() >= Duration::from_millis(5));
        assert!(guard.call_blocking(slow).unwrap_err().is_too_busy());
    }
}
