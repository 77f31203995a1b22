//! The tower layers over real HTTP on 127.0.0.1: an axum router shedding load with
//! `TooBusyLayer`, and a hyper-util client wrapped by `BreakerLayer` (one breaker per authority)
//! and `RaceRetryLayer`.
#![cfg(all(feature = "tower", feature = "axum"))]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use http_body_util::Empty;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use resiliency::breaker::{self, State};
use resiliency::race_retry::{After, RaceRetry};
use resiliency::too_busy::TooBusy;
use resiliency::tower::{authority_of, error_response, BreakerLayer, RaceRetryLayer, TooBusyLayer};
use resiliency::{Breaker, Rejected};
use tokio::sync::Notify;
use tower::{Service, ServiceBuilder, ServiceExt};

type Body = Empty<&'static [u8]>;

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

fn client() -> Client<HttpConnector, Body> {
    Client::builder(TokioExecutor::new()).build_http()
}

fn get_request(addr: SocketAddr, path: &str) -> http::Request<Body> {
    http::Request::get(format!("http://{addr}{path}"))
        .body(Empty::new())
        .unwrap()
}

#[tokio::test]
async fn an_axum_router_with_the_too_busy_layer_answers_503_while_its_slot_is_taken() {
    let entered = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (e, r) = (entered.clone(), release.clone());
    let guard = TooBusyLayer::new(TooBusy::builder("tower::http::busy").max_in_flight(1)).unwrap();
    let router = Router::new()
        .route(
            "/",
            get(move || {
                let (e, r) = (e.clone(), r.clone());
                async move {
                    e.notify_one();
                    r.notified().await;
                    "done"
                }
            }),
        )
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(error_response))
                .layer(guard),
        );
    let addr = serve(router).await;
    let client = client();
    let first = tokio::spawn(client.request(get_request(addr, "/")));
    entered.notified().await;
    let refused = client.request(get_request(addr, "/")).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    release.notify_one();
    assert_eq!(first.await.unwrap().unwrap().status(), StatusCode::OK);
    // The slot came back.
    let again = tokio::spawn(client.request(get_request(addr, "/")));
    entered.notified().await;
    release.notify_one();
    assert_eq!(again.await.unwrap().unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn a_client_breaker_keyed_by_authority_opens_only_for_the_failing_server() {
    let healthy = serve(Router::new().route("/", get(|| async { "ok" }))).await;
    let failing_hits = Arc::new(AtomicU32::new(0));
    let hits = failing_hits.clone();
    let failing = serve(Router::new().route(
        "/",
        get(move || {
            hits.fetch_add(1, Ordering::Relaxed);
            async { (StatusCode::INTERNAL_SERVER_ERROR, "down") }
        }),
    ))
    .await;
    let name = "tower::http::per_authority";
    let mut svc = ServiceBuilder::new()
        .layer(
            BreakerLayer::new(Breaker::builder(name).error_threshold(2))
                .unwrap()
                .http_server_errors()
                .key_by(authority_of::<Body>),
        )
        .service(client());
    for _ in 0..2 {
        let response = svc
            .ready()
            .await
            .unwrap()
            .call(get_request(failing, "/"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
    let error = svc
        .ready()
        .await
        .unwrap()
        .call(get_request(failing, "/"))
        .await
        .unwrap_err();
    assert!(Rejected::find_in(&*error).unwrap().is_circuit_open());
    assert_eq!(
        failing_hits.load(Ordering::Relaxed),
        2,
        "refused without a request"
    );
    for _ in 0..3 {
        let response = svc
            .ready()
            .await
            .unwrap()
            .call(get_request(healthy, "/"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let family = breaker::get_keyed(name).unwrap();
    assert_eq!(
        family.get(&failing.to_string()).unwrap().state(),
        State::Open
    );
    assert_eq!(
        family.get(&healthy.to_string()).unwrap().state(),
        State::Closed
    );
}

#[tokio::test]
async fn a_raced_client_request_is_answered_by_the_second_attempt_when_the_first_is_slow() {
    let seen = Arc::new(AtomicU32::new(0));
    let count = seen.clone();
    let server = serve(Router::new().route(
        "/",
        get(move || {
            let n = count.fetch_add(1, Ordering::Relaxed) + 1;
            async move {
                if n == 1 {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
                n.to_string()
            }
        }),
    ))
    .await;
    let race = RaceRetryLayer::new(
        RaceRetry::builder("tower::http::race")
            .retries(1)
            .after(After::Fixed(Duration::from_millis(50)))
            .total(Duration::from_secs(2))
            .no_budget(),
    )
    .unwrap();
    let mut svc = ServiceBuilder::new().layer(race).service(client());
    let started = std::time::Instant::now();
    let response = svc
        .ready()
        .await
        .unwrap()
        .call(get_request(server, "/"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&body[..], b"2", "the second attempt answered");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(seen.load(Ordering::Relaxed), 2);
}
