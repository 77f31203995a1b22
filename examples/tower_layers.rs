//! The tower layers (`resiliency::tower`) on both sides of HTTP on 127.0.0.1.
//!
//! ```text
//! cargo run --example tower_layers --features tower,axum
//! ```
//!
//! Serves three axum routers for a moment: `slow` answers its first request late, `broken`
//! answers 500, and `busy` sheds load with `TooBusyLayer` (one request at a time). A hyper-util
//! client wrapped by `RaceRetryLayer` over a `BreakerLayer` keyed by authority sends them
//! requests, prints what happens, and exits.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use resiliency::race_retry::{After, RaceRetry};
use resiliency::too_busy::TooBusy;
use resiliency::tower::{
    authority_of, error_response, BoxError, BreakerLayer, RaceRetryLayer, TooBusyLayer,
};
use resiliency::{Breaker, Rejected};
use tower::{Service, ServiceBuilder, ServiceExt};

type Body = Empty<&'static [u8]>;

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    // Three servers: `slow` keeps its first request waiting 2 s; `broken` answers 500; `busy`
    // has one request in flight at a time and refuses others with a 503 (`error_response`
    // makes the response of a refusal).
    let seen = Arc::new(AtomicU32::new(0));
    let slow = serve(Router::new().route(
        "/",
        get(move || {
            let n = seen.fetch_add(1, Ordering::Relaxed) + 1;
            async move {
                if n == 1 {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                format!("answered by request {n}")
            }
        }),
    ))
    .await;
    let broken = serve(Router::new().route(
        "/",
        get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "down") }),
    ))
    .await;
    let busy = serve(
        Router::new()
            .route("/", get(|| tokio::time::sleep(Duration::from_millis(200))))
            .layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(error_response))
                    .layer(TooBusyLayer::new(
                        TooBusy::builder("busy").max_in_flight(1),
                    )?),
            ),
    )
    .await;

    // The client: a race over a breaker per host.
    let mut client = ServiceBuilder::new()
        .layer(
            RaceRetryLayer::new(
                RaceRetry::builder("client")
                    .retries(1)
                    .after(After::Fixed(Duration::from_millis(100)))
                    .total(Duration::from_secs(1)),
            )?
            // A refusal of the breaker is an answer, not worth another attempt.
            .retry_if(|error: &BoxError| Rejected::find_in(&**error).is_none()),
        )
        .layer(
            BreakerLayer::new(Breaker::builder("hosts").error_threshold(2))?
                .http_server_errors()
                .key_by(authority_of::<Body>),
        )
        .service(Client::builder(TokioExecutor::new()).build_http::<Body>());
    let get = |addr: SocketAddr, path: &str| {
        http::Request::get(format!("http://{addr}{path}"))
            .body(Empty::new())
            .unwrap()
    };

    // 1. A slow first attempt, overtaken by the second 100 ms later.
    let started = std::time::Instant::now();
    let response = client.ready().await?.call(get(slow, "/")).await?;
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    println!(
        "race:     {:?} after {} ms",
        String::from_utf8_lossy(&body),
        started.elapsed().as_millis()
    );

    // 2. The broken host: two 500s open its breaker, the next request is refused at once.
    for _ in 0..3 {
        match client.ready().await?.call(get(broken, "/")).await {
            Ok(response) => println!("broken:   {}", response.status()),
            Err(error) => println!("broken:   refused: {error}"),
        }
    }
    // ... while the other host's breaker stays closed.
    let response = client.ready().await?.call(get(slow, "/")).await?;
    println!("slow:     {} (its breaker is closed)", response.status());

    // 3. The server sheds load: one request at a time, a second concurrent one is a 503.
    let raw = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let (first, second) = tokio::join!(raw.request(get(busy, "/")), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        raw.request(get(busy, "/")).await
    });
    let second = second?;
    println!(
        "shedding: {} and {} (retry-after: {:?})",
        first?.status(),
        second.status(),
        second.headers().get("retry-after")
    );
    Ok(())
}
