//! One registry for every policy (`#[breaker]`, `#[race_retry]`, `#[too_busy]`): a name finds the policy whether an
//! attribute, a builder or a `tower` layer made it, a layer and an attribute of one name drive
//! one policy (its settings, state, stats and metrics) whichever came first, and options that
//! differ are an error for a layer and a logged settings error for an attribute, never silent.
#![cfg(feature = "tower")]

use crate::support;

use std::future::pending;

use resiliency::race_retry::{self, After, RaceRetry};
use resiliency::settings::{self, Policy};
use resiliency::too_busy::{self, TooBusy};
use resiliency::tower::{RaceRetryLayer, TooBusyLayer};
use resiliency::Rejected;
use support::{ms, poll_once, secs, BoxError, Captured};
use tokio::time::Instant;
use tower::{service_fn, Layer, Service, ServiceExt};

/// A service that never answers.
fn never() -> impl Service<(), Response = (), Error = BoxError> + Clone {
    service_fn(|()| pending::<Result<(), BoxError>>())
}

// ---------------------------------------------------------------------------------------------
// race_retry

#[resiliency::race_retry(
    name = "one.race.attribute_first",
    retries = 1,
    after = "50ms",
    total = "1s"
)]
async fn race_attribute_first() -> Result<(), Rejected> {
    pending::<()>().await;
    Ok(())
}

/// The attribute first: `race_retry::get` finds its policy after its first call, a layer of the
/// same options drives that policy (its deadline, its stats), a run-time setting reaches both, and
/// a layer of other options is an error that names the setting, both values and their origins.
#[tokio::test(start_paused = true)]
async fn race_retry_an_attribute_then_a_layer_share_one_policy() {
    let name = "one.race.attribute_first";
    assert!(race_retry::get(name).is_none(), "not before its first call");
    assert!(race_attribute_first().await.unwrap_err().is_deadline());
    let policy = race_retry::get(name).expect("found after its first call");
    assert!(race_retry::names().contains(&name));
    assert_eq!(race_retry::stats(name).unwrap().deadlines, 1);

    let same = RaceRetry::builder(name)
        .retries(1)
        .after(After::Fixed(ms(50)))
        .total(secs(1));
    let layer = RaceRetryLayer::new(same).unwrap();
    assert!(
        std::ptr::eq(layer.policy(), policy),
        "one policy for the name"
    );
    let mut service = layer.layer(never());
    let start = Instant::now();
    let error = service.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(support::rejected(&error).is_deadline());
    assert_eq!(start.elapsed(), secs(1), "the attribute's deadline");
    assert_eq!(
        race_retry::stats(name).unwrap().deadlines,
        2,
        "one set of stats"
    );
    assert_eq!(policy.stats().extra_attempts, 2);

    settings::set(Policy::RaceRetry, name, "total", "700ms").unwrap();
    let start = Instant::now();
    service.ready().await.unwrap().call(()).await.unwrap_err();
    assert_eq!(start.elapsed(), ms(700), "a setting reaches the layer");
    let start = Instant::now();
    race_attribute_first().await.unwrap_err();
    assert_eq!(start.elapsed(), ms(700), "and the attribute");
    settings::unset(Policy::RaceRetry, name, "total").unwrap();

    let other = RaceRetry::builder(name)
        .retries(1)
        .after(After::Fixed(ms(50)))
        .total(ms(300));
    let error = RaceRetryLayer::new(other).unwrap_err();
    assert_eq!(
        error.to_string(),
        "race_retry `one.race.attribute_first`: `total` = 300ms from the layer differs from 1s in \
         the attribute of `one.race.attribute_first`"
    );
    let error = RaceRetry::builder(name)
        .total(secs(1))
        .register()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "race_retry `one.race.attribute_first`: `retries` = 2 from `register` differs from 1 in \
         the attribute of `one.race.attribute_first`"
    );
    assert_eq!(policy.total(), secs(1), "the registered options stand");
}

#[resiliency::race_retry(
    name = "one.race.layer_first",
    retries = 2,
    after = "50ms",
    total = "1s"
)]
async fn race_layer_first() -> Result<(), Rejected> {
    pending::<()>().await;
    Ok(())
}

/// The layer first: the attribute's site uses the layer's policy (its settings, its stats) and
/// logs, once, the setting in which its own options differ.
#[tokio::test(start_paused = true)]
async fn race_retry_a_layer_then_an_attribute_share_one_policy() {
    let name = "one.race.layer_first";
    let layer = RaceRetryLayer::new(
        RaceRetry::builder(name)
            .retries(1)
            .after(After::Fixed(ms(50)))
            .total(ms(300)),
    )
    .unwrap();
    assert!(std::ptr::eq(layer.policy(), race_retry::get(name).unwrap()));
    assert!(race_retry::names().contains(&name));
    let mut service = layer.layer(never());
    service.ready().await.unwrap().call(()).await.unwrap_err();
    assert_eq!(race_retry::stats(name).unwrap().deadlines, 1);

    let captured = Captured::default();
    let _log = tracing::subscriber::set_default(captured.subscriber());
    for _ in 0..2 {
        let start = Instant::now();
        assert!(race_layer_first().await.unwrap_err().is_deadline());
        assert_eq!(start.elapsed(), ms(300), "the layer's deadline");
    }
    assert_eq!(
        race_retry::stats(name).unwrap().deadlines,
        3,
        "one set of stats"
    );
    assert_eq!(layer.policy().retries(), 1, "the layer's settings");
    let log = captured.text();
    let message = "race_retry `one.race.layer_first`: `retries` = 2 in the attribute of \
                   `one.race.layer_first` differs from 1 from the layer";
    assert_eq!(log.matches(message).count(), 1, "logged once: {log}");
    assert!(log.contains("ERROR"), "{log}");
    assert!(log.contains("resiliency::settings"), "{log}");
}

// ---------------------------------------------------------------------------------------------
// too_busy

#[resiliency::too_busy(name = "one.busy.attribute_first", max_in_flight = 1)]
async fn busy_attribute_first(wait: bool) -> Result<(), Rejected> {
    if wait {
        pending::<()>().await;
    }
    Ok(())
}

/// The attribute first: `too_busy::get` finds its guard after its first call, a layer of the
/// same options shares its slots, and a layer of other options is an error.
#[tokio::test(start_paused = true)]
async fn too_busy_an_attribute_then_a_layer_share_one_guard() {
    let name = "one.busy.attribute_first";
    assert!(too_busy::get(name).is_none(), "not before its first call");
    busy_attribute_first(false).await.unwrap();
    let guard = too_busy::get(name).expect("found after its first call");
    let layer = TooBusyLayer::new(TooBusy::builder(name).max_in_flight(1)).unwrap();
    assert!(std::ptr::eq(layer.guard(), guard), "one guard for the name");

    let mut held = Box::pin(busy_attribute_first(true));
    assert!(poll_once(held.as_mut()).await.is_pending());
    assert_eq!(guard.in_flight(), 1);
    let mut service = layer.layer(service_fn(|()| async { Ok::<_, BoxError>(()) }));
    let error = service.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(
        support::rejected(&error).is_too_busy(),
        "the attribute's call holds the slot"
    );
    drop(held);
    service.ready().await.unwrap().call(()).await.unwrap();

    let error = TooBusyLayer::new(TooBusy::builder(name).max_in_flight(2)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "too_busy `one.busy.attribute_first`: `max_in_flight` = 2 from the layer differs from 1 in \
         the attribute of `one.busy.attribute_first`"
    );
    assert_eq!(
        guard.in_flight_limit(),
        Some(1),
        "the registered options stand"
    );
}

#[resiliency::too_busy(name = "one.busy.layer_first", max_in_flight = 3)]
async fn busy_layer_first(wait: bool) -> Result<(), Rejected> {
    if wait {
        pending::<()>().await;
    }
    Ok(())
}

/// The layer first: the attribute's site uses the layer's guard (its limit, its slots) and logs,
/// once, the setting in which its own options differ.
#[tokio::test(start_paused = true)]
async fn too_busy_a_layer_then_an_attribute_share_one_guard() {
    let name = "one.busy.layer_first";
    let layer = TooBusyLayer::new(TooBusy::builder(name).max_in_flight(1)).unwrap();
    assert!(std::ptr::eq(layer.guard(), too_busy::get(name).unwrap()));

    let captured = Captured::default();
    let _log = tracing::subscriber::set_default(captured.subscriber());
    busy_layer_first(false).await.unwrap();
    let mut held = Box::pin(busy_layer_first(true));
    assert!(poll_once(held.as_mut()).await.is_pending());
    assert_eq!(
        layer.guard().in_flight(),
        1,
        "the attribute's call is the layer's guard's"
    );
    assert!(
        busy_layer_first(false).await.unwrap_err().is_too_busy(),
        "the layer's limit of 1, not the attribute's 3"
    );
    let mut service = layer.layer(service_fn(|()| async { Ok::<_, BoxError>(()) }));
    assert!(service.ready().await.unwrap().call(()).await.is_err());
    drop(held);
    service.ready().await.unwrap().call(()).await.unwrap();

    let log = captured.text();
    let message = "too_busy `one.busy.layer_first`: `max_in_flight` = 3 in the attribute of \
                   `one.busy.layer_first` differs from 1 from the layer";
    assert_eq!(log.matches(message).count(), 1, "logged once: {log}");
    assert!(log.contains("resiliency::settings"), "{log}");
}

// ---------------------------------------------------------------------------------------------
// breaker

#[resiliency::breaker(name = "one.breaker.attribute_first", error_threshold = 2)]
async fn breaker_attribute_first(ok: bool) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err("down".into())
    }
}

/// The attribute first: a builder of other options is an error naming the setting, both values
/// and their origins; one of the same options gets the attribute's breaker; a layer of other
/// options logs the difference and drives the attribute's breaker.
#[tokio::test(start_paused = true)]
async fn breaker_an_attribute_then_a_builder_and_a_layer_share_one_breaker() {
    use resiliency::tower::BreakerLayer;
    use resiliency::Breaker;

    let name = "one.breaker.attribute_first";
    breaker_attribute_first(true).await.unwrap();
    let breaker = resiliency::breaker::get(name).expect("found after its first call");
    let refused = Breaker::builder(name).error_threshold(5).register();
    assert_eq!(
        refused.unwrap_err().to_string(),
        "breaker `one.breaker.attribute_first`: `error_threshold` = 5 from `register` differs \
         from 2 in the attribute of `one.breaker.attribute_first`"
    );
    let same = Breaker::builder(name)
        .error_threshold(2)
        .register()
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&same, &breaker));

    let captured = Captured::default();
    let _log = tracing::subscriber::set_default(captured.subscriber());
    let layer = BreakerLayer::new(Breaker::builder(name).error_threshold(7)).unwrap();
    let mut service = layer.layer(service_fn(|()| async {
        Err::<(), BoxError>("down".into())
    }));
    let text = captured.text();
    assert!(
        text.contains("`error_threshold` = 7 from the layer differs from 2 in the attribute"),
        "{text}"
    );
    // The attribute's threshold: two errors through the layer open the attribute's breaker.
    for _ in 0..2 {
        let _ = service.ready().await.unwrap().call(()).await;
    }
    assert!(breaker_attribute_first(true).await.is_err(), "one breaker");
}

#[resiliency::breaker(name = "one.breaker.builder_first", error_threshold = 2)]
async fn breaker_builder_first(ok: bool) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err("down".into())
    }
}

/// A builder first: the attribute's site uses the registered breaker (its options), and logs
/// the difference as a settings error.
#[tokio::test(start_paused = true)]
async fn breaker_a_builder_then_an_attribute_share_one_breaker() {
    let name = "one.breaker.builder_first";
    let registered = resiliency::Breaker::builder(name)
        .error_threshold(3)
        .register()
        .unwrap();
    let captured = Captured::default();
    let _log = tracing::subscriber::set_default(captured.subscriber());
    for _ in 0..2 {
        assert!(breaker_builder_first(false).await.is_err());
    }
    let text = captured.text();
    assert!(
        text.contains("`error_threshold` = 2 in the attribute of `one.breaker.builder_first` differs from 3 from `register`"),
        "{text}"
    );
    assert_eq!(
        registered.state(),
        resiliency::breaker::State::Closed,
        "the registered threshold, 3"
    );
    assert!(breaker_builder_first(false).await.is_err());
    assert_eq!(registered.state(), resiliency::breaker::State::Open);
}
