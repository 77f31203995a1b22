//! Finding the `Rejected` inside an error: through a box, through `anyhow::Error` made each usual
//! way, in a source chain that loops; and which `#[too_busy]` signal refused.

use crate::support;

use std::error::Error;
use std::fmt;
use std::sync::mpsc;
use std::time::Duration;

use resiliency::{Breaker, Rejected};
use support::BoxError;

fn refused() -> Rejected {
    let breaker = Breaker::builder("refusals_found").build().unwrap();
    breaker.force_open();
    support::current_thread()
        .block_on(breaker.call(async { Ok::<(), Rejected>(()) }))
        .unwrap_err()
}

/// An error whose source is itself: a chain that never ends.
#[derive(Debug)]
struct Looping;

impl fmt::Display for Looping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("loops")
    }
}

impl Error for Looping {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self)
    }
}

/// An application error that keeps the refusal as its source.
#[cfg(feature = "anyhow")]
#[derive(Debug)]
struct Failed(Rejected);

#[cfg(feature = "anyhow")]
impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the payment failed")
    }
}

#[cfg(feature = "anyhow")]
impl Error for Failed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.0)
    }
}

/// Runs `f` on a thread of its own: whether it returned within a second (a spinning one is left
/// behind, and the test fails).
fn returns(f: impl FnOnce() + Send + 'static) -> bool {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(1)).is_ok()
}

#[test]
fn a_source_chain_that_loops_ends_the_search() {
    assert!(returns(|| assert!(Rejected::find_in(&Looping).is_none())));
    let boxed: BoxError = Box::new(Looping);
    assert!(returns(move || assert!(
        Rejected::find_in(&*boxed).is_none()
    )));
}

#[cfg(feature = "axum")]
#[test]
fn response_for_a_source_chain_that_loops_is_none() {
    assert!(returns(|| assert!(resiliency::http::response_for(
        &Looping
    )
    .is_none())));
}

#[cfg(all(feature = "axum", feature = "tower"))]
#[test]
fn error_response_for_a_source_chain_that_loops_is_a_500() {
    assert!(returns(|| {
        let response = support::current_thread()
            .block_on(resiliency::tower::error_response(Box::new(Looping)));
        assert_eq!(response.status(), 500);
    }));
}

#[test]
fn found_through_a_box() {
    let boxed: BoxError = Box::new(refused());
    assert!(Rejected::find_in(&*boxed).unwrap().is_circuit_open());
    let boxed: Box<dyn Error> = Box::new(refused());
    assert!(Rejected::find_in(&*boxed).unwrap().is_circuit_open());
}

/// `?` and `.context` on a `Rejected`: found through `&*error` as well.
#[test]
fn found_through_anyhow_made_with_question_mark_and_context() {
    fn question_mark() -> anyhow::Result<()> {
        Err(refused())?
    }
    let error = question_mark().unwrap_err();
    assert!(Rejected::find_in(&*error).is_some());
    let error = anyhow::Error::new(refused()).context("charging the card");
    assert!(Rejected::find_in(&*error).is_some());
    assert!(Rejected::find_in(error.as_ref()).is_some());
    let error = anyhow::anyhow!(refused());
    assert!(Rejected::find_in(&*error).is_some());
}

/// A box (a tower layer's error) made into `anyhow::Error` with `from_boxed` or `anyhow!`, with or
/// without context: `anyhow::Error` hides the boxed error from its source chain, so it takes
/// `find_in_anyhow` (the `anyhow` feature).
#[cfg(feature = "anyhow")]
#[test]
fn found_through_anyhow_made_from_a_box() {
    let boxed = || -> BoxError { Box::new(refused()) };
    let from_boxed = anyhow::Error::from_boxed(boxed());
    let with_macro = anyhow::anyhow!(boxed());
    let with_context = anyhow::Error::from_boxed(boxed()).context("charging the card");
    for error in [from_boxed, with_macro, with_context] {
        assert!(
            Rejected::find_in_anyhow(&error).unwrap().is_circuit_open(),
            "not found in {error:?}"
        );
    }
    // Every other way, too.
    let error = anyhow::Error::new(refused()).context("charging the card");
    assert!(Rejected::find_in_anyhow(&error).is_some());
    let nested: BoxError = Box::new(Failed(refused()));
    assert!(Rejected::find_in_anyhow(&anyhow::Error::from_boxed(nested)).is_some());
    // A message made from the refusal's text is only text.
    let refusal = refused();
    let message = anyhow::anyhow!("{refusal}");
    assert!(Rejected::find_in_anyhow(&message).is_none());
    assert!(Rejected::find_in_anyhow(&anyhow::anyhow!("plain")).is_none());
}

#[cfg(all(feature = "anyhow", feature = "axum"))]
#[test]
fn a_tower_refusal_made_into_anyhow_is_a_503() {
    let boxed: BoxError = Box::new(refused());
    let error = anyhow::Error::from_boxed(boxed).context("calling the inventory");
    let response = resiliency::http::response_for_anyhow(&error).unwrap();
    assert_eq!(response.status(), 503);
    assert!(resiliency::http::response_for_anyhow(&anyhow::anyhow!("plain")).is_none());
}

mod busy_signals {
    use std::sync::LazyLock;

    use resiliency::too_busy::{Signal, TooBusy};
    use resiliency::Rejected;

    static IN_FLIGHT: LazyLock<TooBusy> = LazyLock::new(|| {
        TooBusy::builder("signals.in_flight")
            .max_in_flight(1)
            .build()
            .unwrap()
    });

    #[tokio::test]
    async fn in_flight() {
        let held = IN_FLIGHT.call(std::future::pending::<Result<(), Rejected>>());
        let mut held = std::pin::pin!(held);
        assert!(super::support::poll_once(held.as_mut()).await.is_pending());
        let refused = IN_FLIGHT
            .call(async { Ok::<(), Rejected>(()) })
            .await
            .unwrap_err();
        assert_eq!(refused.busy_signal(), Some(Signal::InFlight));
    }

    static LATENCY: LazyLock<TooBusy> = LazyLock::new(|| {
        TooBusy::builder("signals.latency")
            .max_latency(std::time::Duration::from_millis(10))
            .build()
            .unwrap()
    });

    #[tokio::test(start_paused = true)]
    async fn latency() {
        LATENCY
            .call(async {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                Ok::<(), Rejected>(())
            })
            .await
            .unwrap();
        let refused = LATENCY
            .call(async { Ok::<(), Rejected>(()) })
            .await
            .unwrap_err();
        assert_eq!(refused.busy_signal(), Some(Signal::Latency));
    }

    #[test]
    fn none_for_other_refusals() {
        assert_eq!(super::refused().busy_signal(), None);
    }
}
