//! `resiliency::tower::BreakerLayer` over `tower::service_fn`, under a paused clock.
#![cfg(feature = "tower")]

use crate::support;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::settings::{self, Policy};
use resiliency::tower::{authority_of, BreakerLayer};
use resiliency::{Breaker, Rejected};
use support::ms;
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

type Reply = Result<u16, std::io::Error>;

fn failing() -> std::io::Error {
    std::io::Error::other("upstream down")
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_in_call_without_calling_the_inner_service() {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let layer = BreakerLayer::new(Breaker::builder("tower::refuse").error_threshold(2)).unwrap();
    let mut svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |_: ()| {
            seen.fetch_add(1, Ordering::Relaxed);
            async { Err::<u16, _>(failing()) }
        }));
    for _ in 0..2 {
        let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
        assert!(error.downcast_ref::<std::io::Error>().is_some(), "{error}");
    }
    assert_eq!(breaker::get("tower::refuse").unwrap().state(), State::Open);
    // Refused at once: the inner service is not called, and the error is a Rejected.
    let future = svc.ready().await.unwrap().call(());
    assert_eq!(calls.load(Ordering::Relaxed), 2);
    let error = future.await.unwrap_err();
    let rejected = error.downcast_ref::<Rejected>().expect("a Rejected");
    assert!(rejected.is_circuit_open());
    assert!(Rejected::find_in(&*error).is_some());
    // The breaker is the registered one, the same `breaker::get` returns.
    assert!(std::ptr::eq(
        svc.breaker(),
        &*breaker::get("tower::refuse").unwrap()
    ));
}

#[tokio::test(start_paused = true)]
async fn new_uses_the_registered_breaker_of_the_name() {
    let registered = Breaker::builder("tower::registered")
        .error_threshold(1)
        .register()
        .unwrap();
    let mut svc = BreakerLayer::new(Breaker::builder("tower::registered"))
        .unwrap()
        .layer_service(service_fn(|_: ()| async { Err::<u16, _>(failing()) }));
    assert!(std::ptr::eq(svc.breaker(), &*registered));
    let _ = svc.ready().await.unwrap().call(()).await;
    assert_eq!(registered.state(), State::Open);
}

trait LayerService<S>: tower::Layer<S> + Sized {
    fn layer_service(self, inner: S) -> Self::Service {
        self.layer(inner)
    }
}
impl<S, L: tower::Layer<S>> LayerService<S> for L {}

#[tokio::test(start_paused = true)]
async fn server_errors_count_5xx_responses_not_4xx() {
    let status = Arc::new(AtomicU32::new(404));
    let now = status.clone();
    let layer = BreakerLayer::new(Breaker::builder("tower::5xx").error_threshold(2))
        .unwrap()
        .http_server_errors();
    let mut svc = layer.layer_service(service_fn(move |_: http::Request<()>| {
        let code = now.load(Ordering::Relaxed) as u16;
        async move { Ok::<_, Infallible>(http::Response::builder().status(code).body(()).unwrap()) }
    }));
    let request = || http::Request::new(());
    for _ in 0..5 {
        let response = svc.ready().await.unwrap().call(request()).await.unwrap();
        assert_eq!(response.status(), 404);
    }
    assert_eq!(svc.breaker().state(), State::Closed);
    status.store(503, Ordering::Relaxed);
    for _ in 0..2 {
        let response = svc.ready().await.unwrap().call(request()).await.unwrap();
        assert_eq!(response.status(), 503, "a 5xx is still the response");
    }
    assert_eq!(svc.breaker().state(), State::Open);
    let error = svc
        .ready()
        .await
        .unwrap()
        .call(request())
        .await
        .unwrap_err();
    assert!(support::rejected(&error).is_circuit_open());
}

#[tokio::test(start_paused = true)]
async fn failure_if_sees_the_inner_types_and_false_is_a_success() {
    let layer = BreakerLayer::new(Breaker::builder("tower::failure_if").error_threshold(1))
        .unwrap()
        .failure_if(|outcome: &Reply| matches!(outcome, Ok(500..)));
    let mut svc = layer.layer_service(service_fn(|code: u16| async move {
        if code == 0 {
            Err(failing())
        } else {
            Ok(code)
        }
    }));
    // An error for which the classifier is false does not count.
    assert!(svc.ready().await.unwrap().call(0).await.is_err());
    assert_eq!(svc.ready().await.unwrap().call(200).await.unwrap(), 200);
    assert_eq!(svc.breaker().state(), State::Closed);
    assert_eq!(svc.ready().await.unwrap().call(500).await.unwrap(), 500);
    assert_eq!(svc.breaker().state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn key_by_authority_opens_only_the_failing_hosts_breaker() {
    let layer = BreakerLayer::new(Breaker::builder("tower::per_host").error_threshold(1))
        .unwrap()
        .http_server_errors()
        .key_by(authority_of::<()>);
    let mut svc = layer.layer_service(service_fn(|request: http::Request<()>| async move {
        let code = if request.uri().host() == Some("bad.test") {
            500
        } else {
            200
        };
        Ok::<_, Infallible>(http::Response::builder().status(code).body(()).unwrap())
    }));
    let to = |host: &str| {
        http::Request::get(format!("http://{host}/"))
            .body(())
            .unwrap()
    };
    assert_eq!(
        svc.ready()
            .await
            .unwrap()
            .call(to("bad.test"))
            .await
            .unwrap()
            .status(),
        500
    );
    let error = svc
        .ready()
        .await
        .unwrap()
        .call(to("bad.test"))
        .await
        .unwrap_err();
    assert!(support::rejected(&error).is_circuit_open());
    for _ in 0..3 {
        let ok = svc
            .ready()
            .await
            .unwrap()
            .call(to("good.test:8080"))
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);
    }
    let family = breaker::get_keyed("tower::per_host").unwrap();
    assert!(Arc::ptr_eq(svc.family(), &family));
    assert_eq!(family.get("bad.test").unwrap().state(), State::Open);
    assert_eq!(family.get("good.test:8080").unwrap().state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_host_header_keys_a_request_without_an_authority() {
    let request = http::Request::get("/path")
        .header("host", "api.test")
        .body(())
        .unwrap();
    assert_eq!(authority_of(&request), "api.test");
    assert_eq!(authority_of(&http::Request::new(())), "");
}

#[tokio::test(start_paused = true)]
async fn run_time_settings_by_name_reach_the_layers_breaker() {
    let name = "tower::settings";
    let mut svc = BreakerLayer::new(Breaker::builder(name))
        .unwrap()
        .layer_service(service_fn(|_: ()| async { Err::<u16, _>(failing()) }));
    assert_eq!(svc.breaker().state(), State::Closed);
    settings::set(Policy::Breaker, name, "error_threshold", 1).unwrap();
    let _ = svc.ready().await.unwrap().call(()).await;
    assert_eq!(svc.breaker().state(), State::Open);
    settings::set(Policy::Breaker, name, "error_timeout", "1s").unwrap();
    assert_eq!(svc.breaker().error_timeout(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn the_breakers_timeout_bounds_the_call() {
    let layer = BreakerLayer::new(
        Breaker::builder("tower::timeout")
            .timeout(ms(100))
            .error_threshold(1),
    )
    .unwrap();
    let mut svc = layer.layer_service(service_fn(|_: ()| async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<u16, std::io::Error>(200)
    }));
    let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(support::rejected(&error).is_timeout());
    assert_eq!(svc.breaker().state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_response_future_gives_the_probe_slot_back_without_counting() {
    let layer = BreakerLayer::new(
        Breaker::builder("tower::dropped")
            .error_threshold(1)
            .error_timeout(ms(100)),
    )
    .unwrap();
    let mut svc = layer.layer_service(service_fn(|slow: bool| async move {
        if slow {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok::<u16, std::io::Error>(200)
        } else {
            Err(failing())
        }
    }));
    let _ = svc.ready().await.unwrap().call(false).await;
    assert_eq!(svc.breaker().state(), State::Open);
    tokio::time::advance(ms(150)).await;
    // The probe is admitted in `call`, and dropped before it was ever polled.
    let probe = svc.ready().await.unwrap().call(true);
    let other = svc.ready().await.unwrap().call(true).await.unwrap_err();
    assert_eq!(
        support::rejected(&other).kind(),
        resiliency::RejectedKind::CircuitHalfOpen
    );
    drop(probe);
    // Polled, then dropped while it runs.
    let mut probe = Box::pin(svc.ready().await.unwrap().call(true));
    assert!(support::poll_once(probe.as_mut()).await.is_pending());
    drop(probe);
    assert_eq!(svc.breaker().state(), State::HalfOpen);
    assert_eq!(
        svc.ready().await.unwrap().call(true).now_or_never_pending(),
        ()
    );
}

trait PendingOnce {
    fn now_or_never_pending(self);
}
impl<F: std::future::Future> PendingOnce for F {
    fn now_or_never_pending(self) {
        let mut future = Box::pin(self);
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(
            future.as_mut().poll(&mut cx).is_pending(),
            "the probe slot did not come back"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_inner_service_counts_as_an_error_and_leaves_no_slot_taken() {
    let layer = BreakerLayer::new(
        Breaker::builder("tower::panics")
            .error_threshold(1)
            .error_timeout(ms(100)),
    )
    .unwrap();
    let mut svc = layer.layer_service(service_fn(|panic_in: u8| async move {
        match panic_in {
            1 => panic!("the inner future panics"),
            _ => Ok::<u16, std::io::Error>(200),
        }
    }));
    let call = svc.ready().await.unwrap().call(1);
    let outcome = tokio::spawn(call).await;
    assert!(outcome.unwrap_err().is_panic());
    assert_eq!(
        svc.breaker().state(),
        State::Open,
        "a panic counts as an error"
    );
    tokio::time::advance(ms(150)).await;
    assert_eq!(svc.ready().await.unwrap().call(0).await.unwrap(), 200);
    assert_eq!(svc.breaker().state(), State::Closed);

    // A service whose `call` itself panics: the probe slot taken in `call` comes back.
    let options = Breaker::builder("tower::panics_in_call")
        .error_threshold(1)
        .error_timeout(ms(100));
    let panics = Arc::new(AtomicBool::new(false));
    let mut svc = BreakerLayer::new(options)
        .unwrap()
        .layer_service(PanicsInCall(panics.clone()));
    assert!(svc
        .call(())
        .await
        .unwrap_err()
        .downcast_ref::<std::io::Error>()
        .is_some());
    assert_eq!(svc.breaker().state(), State::Open);
    tokio::time::advance(ms(150)).await;
    panics.store(true, Ordering::Relaxed);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(svc.call(()))));
    assert!(caught.is_err());
    panics.store(false, Ordering::Relaxed);
    let probe = svc.call(()).await.unwrap_err();
    assert!(
        probe.downcast_ref::<std::io::Error>().is_some(),
        "admitted as a probe: {probe}"
    );
}

#[derive(Clone)]
struct PanicsInCall(Arc<AtomicBool>);

impl Service<()> for PanicsInCall {
    type Response = ();
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<(), std::io::Error>>;
    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: ()) -> Self::Future {
        assert!(!self.0.load(Ordering::Relaxed), "call panics");
        std::future::ready(Err(failing()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_classifier_counts_as_an_error_and_the_panic_goes_on() {
    let layer = BreakerLayer::new(Breaker::builder("tower::classifier_panics").error_threshold(1))
        .unwrap()
        .failure_if(|_: &Reply| panic!("the classifier panics"));
    let mut svc = layer.layer_service(service_fn(|_: ()| async { Ok::<u16, std::io::Error>(200) }));
    let call = svc.ready().await.unwrap().call(());
    assert!(tokio::spawn(call).await.unwrap_err().is_panic());
    assert_eq!(svc.breaker().state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn credentials_in_the_uri_never_key_a_breaker() {
    let with_password = |password: &str| {
        http::Request::get(format!("http://user:{password}@creds.test:8080/"))
            .body(())
            .unwrap()
    };
    assert_eq!(authority_of(&with_password("hunter2")), "creds.test:8080");
    assert_eq!(
        authority_of(
            &http::Request::get("/")
                .header("host", "token@api.test")
                .body(())
                .unwrap()
        ),
        "api.test"
    );

    let layer = BreakerLayer::new(Breaker::builder("tower::creds").error_threshold(1))
        .unwrap()
        .key_by(authority_of::<()>);
    let mut svc = layer.layer_service(service_fn(|_: http::Request<()>| async {
        Err::<u16, _>(failing())
    }));
    for password in ["hunter2", "swordfish"] {
        let _ = svc
            .ready()
            .await
            .unwrap()
            .call(with_password(password))
            .await;
    }
    let refused = svc
        .ready()
        .await
        .unwrap()
        .call(with_password("letmein"))
        .await
        .unwrap_err();
    let refused = support::rejected(&refused);
    assert_eq!(refused.key(), Some("creds.test:8080"));
    for password in ["hunter2", "swordfish", "letmein", "user"] {
        assert!(!refused.to_string().contains(password), "{refused}");
    }
    let family = breaker::get_keyed("tower::creds").unwrap();
    let keys: Vec<String> = family
        .breakers()
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    assert_eq!(keys, ["creds.test:8080"], "one breaker for the host");
}
