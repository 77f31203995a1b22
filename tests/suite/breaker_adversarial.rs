//! The breaker's windows and state word under the interleavings and volumes that break a naive
//! lock-free design, through the public API:
//!
//! * The count rule opens exactly when `error_threshold` errors fall within the window, however
//!   concurrent errors interleave.
//! * The rate rule's counts hold millions of calls in one bucket, so the rate it computes is the
//!   rate of the calls made.
//! * A probe admitted many state changes ago never frees the slot of a probe running now.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use resiliency::breaker::State;
use resiliency::{Breaker, Rejected};

use crate::support;

#[derive(Debug)]
enum AppError {
    Failed,
    Rejected(#[allow(dead_code)] Rejected),
}

impl From<Rejected> for AppError {
    fn from(r: Rejected) -> Self {
        AppError::Rejected(r)
    }
}

fn fail() -> Result<(), AppError> {
    Err(AppError::Failed)
}

// ---------------------------------------------------------------------------------------------
// The count rule under concurrent errors
// ---------------------------------------------------------------------------------------------

const THREADS: usize = 4;

/// `THREADS` threads each record `per_thread` errors on `b` at once; returns how many of the calls
/// were refused.
fn concurrent_errors(b: &Arc<Breaker>, per_thread: usize) -> usize {
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, start) = (b.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                (0..per_thread)
                    .filter(|_| matches!(b.call_blocking(fail), Err(AppError::Rejected(_))))
                    .count()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).sum()
}

#[test]
fn count_rule_opens_exactly_at_the_threshold_under_concurrent_errors() {
    const THRESHOLD: u32 = 1000;
    for round in 0..20 {
        let b = Arc::new(
            Breaker::builder("adversarial-count")
                .error_threshold(THRESHOLD)
                .error_window(Duration::from_secs(3600))
                .build()
                .unwrap(),
        );
        // 996 errors from 4 threads at once: short of the threshold by 4.
        let per_thread = (THRESHOLD as usize - THREADS) / THREADS;
        let refused = concurrent_errors(&b, per_thread);
        let snapshot = b.snapshot();
        assert_eq!(
            (snapshot.state, refused),
            (State::Closed, 0),
            "round {round}: opened with at most {} errors of {THRESHOLD}: {snapshot:?}",
            per_thread * THREADS - refused
        );
        assert_eq!(snapshot.recent_errors, (per_thread * THREADS) as u64);
        // The last four, one at a time: only the last one opens it.
        for n in 1..=THREADS {
            assert!(matches!(b.call_blocking(fail), Err(AppError::Failed)));
            let expected = if n == THREADS {
                State::Open
            } else {
                State::Closed
            };
            assert_eq!(
                b.state(),
                expected,
                "round {round}: after {} errors",
                per_thread * THREADS + n
            );
        }
    }
}

#[test]
fn count_rule_opens_when_the_threshold_is_reached_by_concurrent_errors() {
    // Errors that reach the threshold together open the breaker: whichever is recorded last sees
    // every other.
    for round in 0..50 {
        let b = Arc::new(
            Breaker::builder("adversarial-count-reach")
                .error_threshold(8)
                .error_window(Duration::from_secs(3600))
                .build()
                .unwrap(),
        );
        assert_eq!(concurrent_errors(&b, 2), 0);
        assert_eq!(b.state(), State::Open, "round {round}: 8 errors of 8");
    }
}

// ---------------------------------------------------------------------------------------------
// The rate rule under volume
// ---------------------------------------------------------------------------------------------

#[test]
fn rate_rule_keeps_the_rate_of_millions_of_calls_in_one_bucket() {
    // One thread (one stripe), a window of an hour: every call lands in the same bucket. One
    // error in 12 (8.3%) under `failure_rate = 0.1`, over 2.6 million calls.
    let b = Breaker::builder("adversarial-rate")
        .failure_rate(0.1)
        .min_calls(100)
        .error_window(Duration::from_secs(3600))
        .build()
        .unwrap();
    const ROUNDS: u64 = 220_000;
    for round in 0..ROUNDS {
        for i in 0..11 {
            if let Err(refused) = b.call_blocking(|| Ok::<_, AppError>(())) {
                let snapshot = b.snapshot();
                panic!(
                    "refused after {} calls at a rate of 1/12 (< 0.1): {refused:?}; {snapshot:?}",
                    round * 12 + i
                );
            }
        }
        match b.call_blocking(fail) {
            Err(AppError::Failed) => {}
            other => {
                let snapshot = b.snapshot();
                panic!(
                    "refused after {} calls at a rate of 1/12 (< 0.1): {other:?}; {snapshot:?}",
                    round * 12 + 11
                );
            }
        }
    }
    let snapshot = b.snapshot();
    assert_eq!(snapshot.state, State::Closed);
    assert_eq!(snapshot.recent_calls, Some(ROUNDS * 12), "{snapshot:?}");
    assert_eq!(snapshot.recent_errors, ROUNDS, "{snapshot:?}");
}

// ---------------------------------------------------------------------------------------------
// Probes of long ago
// ---------------------------------------------------------------------------------------------

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

type Held<'a> = Pin<Box<dyn Future<Output = Result<(), Rejected>> + 'a>>;

/// A call whose body never answers, polled once: `Some` while it runs (admitted), `None` when
/// refused.
fn hold(b: &Breaker) -> Option<Held<'_>> {
    let waker = Waker::from(Arc::new(Noop));
    let mut call: Held<'_> = Box::pin(b.call(std::future::pending::<Result<(), Rejected>>()));
    match call.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Pending => Some(call),
        Poll::Ready(Err(refused)) => {
            assert!(refused.is_circuit_open(), "{refused}");
            None
        }
        Poll::Ready(Ok(())) => unreachable!(),
    }
}

#[test]
fn a_probe_of_long_ago_never_frees_a_live_probes_slot() {
    let rt = support::paused_runtime();
    rt.block_on(async {
        let b = Breaker::builder("adversarial-epoch")
            .error_threshold(1)
            .error_timeout(Duration::from_millis(1))
            .half_open_calls(1)
            .build()
            .unwrap();
        let trip_and_wait = || async {
            assert!(matches!(
                b.call(async { fail() }).await,
                Err(AppError::Failed)
            ));
            assert_eq!(b.state(), State::Open);
            tokio::time::advance(Duration::from_millis(1)).await;
        };
        trip_and_wait().await;
        let stale = hold(&b).expect("the first probe");
        // The breaker moves on and half-opens again 2^18 state changes after the stale probe was
        // admitted: the resets (the first out of half-open), the trip, the half-open.
        for _ in 0..(1 << 18) - 2 {
            b.reset();
        }
        trip_and_wait().await;
        let live = hold(&b).expect("a probe of the new half-open round");
        assert!(hold(&b).is_none(), "half_open_calls = 1");
        // The stale probe ends: its slot went with its round.
        drop(stale);
        assert!(
            hold(&b).is_none(),
            "the stale probe freed the live probe's slot: two probes run"
        );
        assert_eq!(b.state(), State::HalfOpen);
        drop(live);
        assert!(hold(&b).is_some(), "the live probe's slot came back");
    });
}
