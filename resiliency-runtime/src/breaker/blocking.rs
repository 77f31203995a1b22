//! Calls of a blocking closure through a breaker: the admission, outcome and panic rules of the
//! async [`BreakerCall`](super::future::BreakerCall), run on the caller's thread with no future
//! and no timer.

use std::panic::{self, AssertUnwindSafe};

use super::breaker::Breaker;
use super::call::{every_error, no_hint};
use super::future::record_error;
use super::record::Outcome;
use crate::rejected::Rejected;

impl Breaker {
    /// Runs the blocking `body` on the caller's thread through the breaker: refused with
    /// [`Rejected`] while open (without running `body`), and every error counts. See
    /// [`call_blocking_if`](Self::call_blocking_if) to count only some errors.
    ///
    /// Admission, probes and outcomes are those of [`call`](Self::call): one breaker serves
    /// blocking and async calls alike (a blocking `#[breaker(name = "db")]` and an async one
    /// share the breaker `db`). A body that panics counts as an error (a probe that panics
    /// re-opens the breaker, and its probe slot comes back), and the panic goes on to the caller.
    ///
    /// Nothing can interrupt a blocking call, so **`timeout` and `half_open_timeout` do not
    /// apply** here: on a breaker that has them (built so, or given them by a run-time setting),
    /// a blocking call runs unbounded and only its own outcome counts. Bound the work inside
    /// the body (a socket or client timeout). `#[breaker]` refuses `timeout` on a blocking fn.
    ///
    /// No tokio runtime is needed: the breaker's clock is tokio's `Instant`, which reads the
    /// system clock outside a runtime and a paused runtime's clock inside one (on its threads and
    /// in its `spawn_blocking` tasks).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::{breaker::State, Breaker, Rejected};
    ///
    /// #[derive(Debug)]
    /// enum DbError { Down, Refused(Rejected) }
    /// impl From<Rejected> for DbError {
    ///     fn from(r: Rejected) -> Self { DbError::Refused(r) }
    /// }
    ///
    /// let breaker = Breaker::builder("db")
    ///     .error_threshold(2)
    ///     .error_timeout(Duration::from_secs(30))
    ///     .build()
    ///     .unwrap();
    /// for _ in 0..2 {
    ///     let _ = breaker.call_blocking(|| Err::<u32, _>(DbError::Down));
    /// }
    /// assert_eq!(breaker.state(), State::Open);
    /// let refused = breaker.call_blocking(|| Ok::<u32, DbError>(1)).unwrap_err();
    /// assert!(matches!(refused, DbError::Refused(r) if r.is_circuit_open()));
    /// ```
    pub fn call_blocking<T, E, F>(&self, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: From<Rejected>,
    {
        run(self, every_error::<E>, no_hint::<E>, body)
    }

    /// Like [`call_blocking`](Self::call_blocking), but an error counts only when
    /// `counts(&error)` is true; one that does not count leaves the window as it was (and frees
    /// its probe slot when half-open), as with [`call_if`](Self::call_if).
    pub fn call_blocking_if<T, E, P, F>(&self, counts: P, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: From<Rejected>,
        P: FnMut(&E) -> bool,
    {
        run(self, counts, no_hint::<E>, body)
    }
}

/// One blocking call: admitted, run, its outcome recorded. The body and the predicate are user
/// code: a panic in either counts as an error, recorded here (not while unwinding, where a
/// subscriber that panicked too would abort the process), and then goes on to the caller.
pub(crate) fn run<T, E, P, H, F>(
    breaker: &Breaker,
    mut counts: P,
    mut hint: H,
    body: F,
) -> Result<T, E>
where
    F: FnOnce() -> Result<T, E>,
    E: From<Rejected>,
    P: FnMut(&E) -> bool,
    H: FnMut(&E) -> Option<std::time::Duration>,
{
    let permit = match breaker.admit() {
        Ok(permit) => permit,
        Err(rejected) => {
            breaker.meter.refused();
            return Err(E::from(rejected));
        }
    };
    let slow_after = breaker.slow_after(permit);
    let started = slow_after.map(|_| tokio::time::Instant::now());
    let ran = panic::catch_unwind(AssertUnwindSafe(|| {
        let output = body();
        let outcome = match &output {
            Ok(_) if is_slow(started, slow_after) => Outcome::Slow,
            Ok(_) => Outcome::Success,
            Err(error) if counts(error) => Outcome::Error,
            Err(_) => Outcome::Ignored,
        };
        (output, outcome)
    }));
    match ran {
        Ok((output, Outcome::Error)) => {
            record_error(breaker, permit, &output, &mut hint);
            output
        }
        Ok((output, outcome)) => {
            breaker.record(permit, outcome);
            output
        }
        Err(payload) => {
            breaker.record(permit, Outcome::Error);
            panic::resume_unwind(payload)
        }
    }
}

/// Whether a call that started at `started` is slow by now (`slow_call_duration`).
fn is_slow(started: Option<tokio::time::Instant>, slow_after: Option<std::time::Duration>) -> bool {
    match (started, slow_after) {
        (Some(started), Some(after)) => started.elapsed() >= after,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::breaker::{Breaker, State};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    fn probe_breaker() -> Breaker {
        Breaker::builder("blocking-unit")
            .error_threshold(1)
            .error_timeout(Duration::from_secs(1))
            .build()
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_probe_reopens_and_frees_its_slot() {
        let breaker = probe_breaker();
        let _ = breaker.call_blocking(|| Err::<(), BoxError>("down".into()));
        assert_eq!(breaker.state(), State::Open);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(breaker.state(), State::HalfOpen);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            breaker.call_blocking(|| -> Result<(), BoxError> { panic!("probe") })
        }));
        assert!(panicked.is_err());
        assert_eq!(breaker.state(), State::Open);
        tokio::time::advance(Duration::from_secs(1)).await;
        // The slot came back: the next probe is admitted and closes the breaker.
        assert_eq!(breaker.call_blocking(|| Ok::<_, BoxError>(7)).unwrap(), 7);
        assert_eq!(breaker.state(), State::Closed);
    }

    #[test]
    fn a_breaker_with_a_timeout_runs_a_blocking_call_unbounded() {
        let breaker = Breaker::builder("blocking-timeout")
            .timeout(Duration::from_millis(1))
            .build()
            .unwrap();
        let out = breaker.call_blocking(|| {
            std::thread::sleep(Duration::from_millis(5));
            Ok::<_, BoxError>(1)
        });
        assert_eq!(out.unwrap(), 1);
        assert_eq!(breaker.state(), State::Closed);
    }
}
