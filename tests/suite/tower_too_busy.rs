//! `resiliency::tower::TooBusyLayer` over `tower::service_fn`, under a paused clock.
#![cfg(feature = "tower")]

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::settings::{self, Policy};
use resiliency::too_busy::{self, TooBusy};
use resiliency::tower::TooBusyLayer;
use tower::{service_fn, Layer, Service, ServiceExt};

/// A service that answers after `ms`, counting the requests it is called with.
fn slow(
    called: Arc<AtomicU32>,
) -> impl Service<u64, Response = u64, Error = std::io::Error> + Clone {
    service_fn(move |ms: u64| {
        called.fetch_add(1, Ordering::Relaxed);
        async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ms)
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_refused_request_fails_at_once_with_a_rejected_and_never_reaches_the_inner_service() {
    let called = Arc::new(AtomicU32::new(0));
    let layer =
        TooBusyLayer::new(TooBusy::builder("tower::too_busy::refuse").max_in_flight(1)).unwrap();
    let mut svc = layer.layer(slow(called.clone()));
    let mut first = Box::pin(svc.ready().await.unwrap().call(100));
    assert!(support::poll_once(first.as_mut()).await.is_pending());
    let error = svc.ready().await.unwrap().call(100).await.unwrap_err();
    assert!(support::rejected(&error).is_too_busy());
    assert_eq!(
        called.load(Ordering::Relaxed),
        1,
        "the refused request was not passed to the inner service"
    );
    assert_eq!(first.await.unwrap(), 100);
    assert_eq!(svc.ready().await.unwrap().call(1).await.unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_response_future_gives_its_slot_back() {
    let layer =
        TooBusyLayer::new(TooBusy::builder("tower::too_busy::dropped").max_in_flight(1)).unwrap();
    let mut svc = layer.layer(slow(Arc::default()));
    let mut first = Box::pin(svc.ready().await.unwrap().call(1_000));
    assert!(support::poll_once(first.as_mut()).await.is_pending());
    assert_eq!(svc.guard().in_flight(), 1);
    drop(first);
    assert_eq!(svc.guard().in_flight(), 0);
    // Admitted in `call`, dropped before its first poll: its slot comes back.
    let unpolled = svc.ready().await.unwrap().call(1_000);
    assert_eq!(svc.guard().in_flight(), 1);
    drop(unpolled);
    assert_eq!(svc.guard().in_flight(), 0);
    assert_eq!(svc.ready().await.unwrap().call(5).await.unwrap(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_inner_service_gives_its_slot_back() {
    let layer =
        TooBusyLayer::new(TooBusy::builder("tower::too_busy::panics").max_in_flight(1)).unwrap();
    let mut svc = layer.layer(service_fn(|panics: bool| async move {
        assert!(!panics, "the inner future panics");
        Ok::<_, std::io::Error>(())
    }));
    let call = svc.ready().await.unwrap().call(true);
    assert!(tokio::spawn(call).await.unwrap_err().is_panic());
    assert_eq!(svc.guard().in_flight(), 0);
    svc.ready().await.unwrap().call(false).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_guard_is_registered_by_name_and_run_time_settings_reach_it() {
    let name = "tower::too_busy::settings";
    let layer = TooBusyLayer::new(TooBusy::builder(name).max_in_flight(8)).unwrap();
    assert!(std::ptr::eq(layer.guard(), too_busy::get(name).unwrap()));
    // The same options: the same guard; other options: an error, the first registration's kept.
    let again = TooBusyLayer::new(TooBusy::builder(name).max_in_flight(8)).unwrap();
    assert!(std::ptr::eq(again.guard(), layer.guard()));
    let error = TooBusyLayer::new(TooBusy::builder(name).max_in_flight(2)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "too_busy `tower::too_busy::settings`: `max_in_flight` = 2 from the layer differs from 8 \
         from the layer"
    );
    assert_eq!(layer.guard().in_flight_limit(), Some(8));

    settings::set(Policy::TooBusy, name, "max_in_flight", 1).unwrap();
    assert_eq!(layer.guard().in_flight_limit(), Some(1));
    let mut svc = layer.layer(slow(Arc::default()));
    let mut first = Box::pin(svc.ready().await.unwrap().call(100));
    assert!(support::poll_once(first.as_mut()).await.is_pending());
    let error = svc.ready().await.unwrap().call(1).await.unwrap_err();
    assert!(support::rejected(&error).is_too_busy());
}

#[test]
fn invalid_options_are_a_config_error() {
    let error = TooBusyLayer::new(TooBusy::builder("tower::too_busy::invalid").max_in_flight(0))
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`max_in_flight` must be at least 1"),
        "{error}"
    );
    assert!(too_busy::get("tower::too_busy::invalid").is_none());
}

/// `max_in_flight = "auto"` through the layer: 24 callers at once on a service that serves 3 at a
/// time (20 ms each) bring the limit down from 20 to a few times 3, and the answered requests
/// wait about as long as that queue: a few holds, where the 24 unguarded would wait 8.
#[tokio::test(start_paused = true)]
async fn an_auto_limit_is_learned_through_the_layer() {
    let slots = Arc::new(tokio::sync::Semaphore::new(3));
    let layer = TooBusyLayer::new(
        TooBusy::builder("tower::too_busy::auto")
            .max_in_flight_auto()
            .auto_min(1),
    )
    .unwrap();
    let svc = layer.layer(service_fn(move |(): ()| {
        let slots = slots.clone();
        async move {
            let _slot = slots.acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<_, std::io::Error>(())
        }
    }));
    let end = tokio::time::Instant::now() + Duration::from_secs(4);
    let callers = (0..24).map(|_| {
        let mut svc = svc.clone();
        async move {
            let mut waited = Vec::new();
            while tokio::time::Instant::now() < end {
                let started = tokio::time::Instant::now();
                match svc.ready().await.unwrap().call(()).await {
                    Ok(()) => waited.push(started.elapsed()),
                    Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
            // The second half of this caller's answered requests: after the limit was learned.
            waited.split_off(waited.len() / 2)
        }
    });
    let late: Vec<_> = futures::future::join_all(callers).await.concat();
    let limit = svc.guard().in_flight_limit().unwrap();
    assert!(svc.guard().learns_in_flight_limit());
    let mean = late.iter().sum::<Duration>() / late.len() as u32;
    assert!((3..=12).contains(&limit), "{limit} {mean:?}");
    assert!(mean <= Duration::from_millis(100), "{mean:?}");
}
