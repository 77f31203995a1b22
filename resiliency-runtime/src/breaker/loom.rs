//! Loom models of the breaker's state word: every interleaving of the admission, the
//! open -> half-open step with its probe permits, probe outcomes racing forcing, a reset and a
//! second probe, and the release of a dropped call. Run with
//! `RUSTFLAGS="--cfg resiliency_loom" cargo test -p resiliency-runtime --release --lib loom`.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::breaker::Breaker;
use super::record::Outcome;
use super::word::Admitted;
use super::State;
use crate::Rejected;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    // Bounded so that the models finish in seconds on two cores (unbounded, they take hours).
    builder.preemption_bound = Some(5);
    builder.check(f);
}

/// An open breaker whose open time has passed: its next call is a probe.
fn open_breaker(half_open_calls: u32, success_threshold: u32) -> Arc<Breaker> {
    let config = Breaker::builder("loom")
        .error_threshold(1)
        .error_timeout(Duration::from_nanos(1))
        .half_open_calls(half_open_calls)
        .success_threshold(success_threshold)
        .validate()
        .unwrap();
    let b = Arc::new(Breaker::new(Arc::new(config), None));
    let permit = b.admit().unwrap();
    assert!(matches!(permit.admitted(), Admitted::Closed(_)));
    b.record(permit, Outcome::Error);
    std::thread::sleep(Duration::from_nanos(10));
    b
}

/// The word's fields must make sense once every permit has been handed back.
fn settled(b: &Breaker) {
    let (phase, probes, successes) = b.word_fields();
    assert!(phase <= 2, "phase bits {phase:#b}");
    assert_eq!(probes, 0, "a probe slot was lost or handed back twice");
    assert!(successes < 2, "half-open successes {successes}");
}

#[test]
fn loom_half_open_admits_at_most_half_open_calls_probes() {
    model(|| {
        let b = open_breaker(1, 1);
        let probing = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (b, probing) = (b.clone(), probing.clone());
                thread::spawn(move || match b.admit() {
                    Ok(permit) if matches!(permit.admitted(), Admitted::Probe(_)) => {
                        assert_eq!(probing.fetch_add(1, SeqCst), 0, "two probes at once");
                        probing.fetch_sub(1, SeqCst);
                        b.record(permit, Outcome::Success);
                    }
                    Ok(permit) => b.record(permit, Outcome::Success),
                    Err(refused) => assert!(refused.is_circuit_open(), "{refused}"),
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        settled(&b);
        assert_eq!(b.state(), State::Closed, "the one probe succeeded");
    });
}

#[test]
fn loom_probe_outcomes_race_forcing_a_reset_and_a_second_probe() {
    model(|| {
        let b = open_breaker(2, 2);
        let fails = {
            let b = b.clone();
            thread::spawn(move || {
                if let Ok(permit) = b.admit() {
                    b.record(permit, Outcome::Error);
                }
            })
        };
        let succeeds = {
            let b = b.clone();
            thread::spawn(move || {
                if let Ok(permit) = b.admit() {
                    b.record(permit, Outcome::Success);
                }
            })
        };
        b.force_open();
        b.reset();
        fails.join().unwrap();
        succeeds.join().unwrap();
        settled(&b);
        // Whatever the order, the breaker is usable: closed (reset last), or open after an
        // error that landed after the reset, with its next call a probe.
        match b.admit() {
            Ok(permit) => b.record(permit, Outcome::Success),
            Err(refused) => panic!("refused after settling: {refused}"),
        }
    });
}

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

#[test]
fn loom_dropped_probes_give_their_slots_back() {
    model(|| {
        // Two slots, two probes dropped at once: their releases race each other and the
        // admissions.
        let b = open_breaker(2, 1);
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let waker = Waker::from(Arc::new(Noop));
                    let mut cx = Context::from_waker(&waker);
                    let call = b.call(std::future::pending::<Result<(), Rejected>>());
                    let mut call = pin!(call);
                    match call.as_mut().poll(&mut cx) {
                        Poll::Pending => {}
                        Poll::Ready(out) => assert!(out.unwrap_err().is_circuit_open()),
                    }
                    // Dropped while its body is pending: the probe's slot comes back.
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        settled(&b);
        for _ in 0..2 {
            assert!(
                matches!(b.admit().map(|p| p.admitted()), Ok(Admitted::Probe(_))),
                "a slot was lost"
            );
        }
    });
}
