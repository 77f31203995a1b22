//! Refusals as HTTP responses, over real HTTP on 127.0.0.1 (the `axum` feature), through the most
//! common axum error type: `struct AppError(anyhow::Error)` with a blanket `From`. A call refused
//! by `#[too_busy]` and one refused by an open `#[breaker]` answer 503 with `Retry-After`; a
//! `#[race_retry]` call past its deadline answers 504. No body names a function, breaker, key or
//! host; the full message goes to a `tracing` event, and into the body only when asked for.
#![cfg(feature = "axum")]

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use resiliency::{breaker, race_retry, too_busy};
use tokio::sync::Semaphore;

/// The usual axum application error, as the README's recipe writes it.
struct AppError(anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for AppError {
    fn from(error: E) -> Self {
        AppError(error.into())
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        resiliency::http::response_for(&*self.0).unwrap_or_else(|| {
            (StatusCode::INTERNAL_SERVER_ERROR, "something went wrong").into_response()
        })
    }
}

/// Holds the handler until the test lets it go; counts the requests that entered it.
#[derive(Clone)]
struct Gate {
    entered: Arc<AtomicUsize>,
    pass: Arc<Semaphore>,
}

#[too_busy(max_in_flight = 1)]
async fn busy(State(gate): State<Gate>) -> Result<String, AppError> {
    gate.entered.fetch_add(1, Ordering::SeqCst);
    let _pass = gate.pass.acquire().await?;
    Ok("busy: done".to_owned())
}

/// An upstream that is down, behind a keyed breaker that opens on its first error.
#[breaker(name = "upstream.payments", key = host, error_threshold = 1, error_timeout = "30s")]
async fn charge(host: &str) -> anyhow::Result<String> {
    anyhow::bail!("connection refused by {host}")
}

async fn open() -> Result<String, AppError> {
    // Context on top: the refusal is a source, not the error itself.
    Ok(charge("10.1.2.3").await.context("charging the card")?)
}

/// A lookup whose attempts never answer within the deadline.
#[race_retry(retries = 1, after = "20ms", total = "60ms")]
async fn lookup_user(id: u64) -> anyhow::Result<String> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok(format!("user {id}"))
}

async fn deadline() -> Result<String, AppError> {
    Ok(lookup_user(7).await?)
}

async fn start(gate: Gate) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let app = Router::new()
        .route("/busy", get(busy))
        .route("/open", get(open))
        .route("/deadline", get(deadline))
        .with_state(gate);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Ok((base, task))
}

/// Names that must not reach an outside client.
const INSIDE: &[&str] = &[
    "http_refusals",
    "busy",
    "upstream",
    "payments",
    "10.1.2.3",
    "lookup",
    "charge",
    "breaker",
    "max_in_flight",
];

fn names_nothing(body: &str) {
    for name in INSIDE {
        assert!(
            !body.to_lowercase().contains(name),
            "the body names `{name}`: {body:?}"
        );
    }
}

// One thread for the server, the client and the test: the `tracing` subscriber set for it sees
// the server's events.
#[tokio::test]
async fn refusals_through_an_anyhow_app_error_are_503_and_504_and_name_nothing() {
    let captured = support::Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let gate = Gate {
        entered: Arc::default(),
        pass: Arc::new(Semaphore::new(0)),
    };
    let (base, server) = start(gate.clone()).await.unwrap();
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("{base}{path}")).send();

    // Too busy: one request held in flight, the next refused.
    let held = tokio::spawn(get("/busy"));
    while gate.entered.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let refused = get("/busy").await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
    let body = refused.text().await.unwrap();
    assert_eq!(body, "Service Unavailable. Retry after 1 second.\n");
    names_nothing(&body);
    gate.pass.add_permits(1);
    assert_eq!(held.await.unwrap().unwrap().status(), StatusCode::OK);

    // An open breaker: the first call fails (500, the app's own error), the second is refused
    // until the breaker half-opens, 30 s on.
    let failed = get("/open").await.unwrap();
    assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let refused = get("/open").await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry_after: u64 = refused.headers()[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (29..=30).contains(&retry_after),
        "Retry-After {retry_after}"
    );
    let body = refused.text().await.unwrap();
    assert_eq!(
        body,
        format!("Service Unavailable. Retry after {retry_after} seconds.\n")
    );
    names_nothing(&body);

    // Past the race's deadline: 504, no Retry-After.
    let timed_out = get("/deadline").await.unwrap();
    assert_eq!(timed_out.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(timed_out.headers().get(header::RETRY_AFTER).is_none());
    let body = timed_out.text().await.unwrap();
    assert_eq!(body, "Gateway Timeout. No answer in time.\n");
    names_nothing(&body);

    // The full messages went to tracing.
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for needle in [
        "`suite::http_refusals::busy` is too busy",
        "circuit breaker `upstream.payments` for key `10.1.2.3` is open",
        "`suite::http_refusals::lookup_user` found no answer within its deadline",
    ] {
        assert!(
            log.lines()
                .any(|line| line.contains("resiliency::http") && line.contains(needle)),
            "no `resiliency::http` event with {needle:?} in:\n{log}"
        );
    }

    // Detailed bodies, for internal services: the message follows the status line's text.
    resiliency::http::set_detailed_bodies(true);
    let detailed = get("/open").await.unwrap().text().await.unwrap();
    resiliency::http::set_detailed_bodies(false);
    let mut lines = detailed.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("Service Unavailable. Retry after"));
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("circuit breaker `upstream.payments` for key `10.1.2.3` is open"),
        "{detailed:?}"
    );
    server.abort();
}
