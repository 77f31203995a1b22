//! `#[too_busy]` on axum handlers, refusals as HTTP responses (`resiliency::http`).
//!
//! ```text
//! cargo run --example too_busy_axum --features axum
//! ```
//!
//! Serves on 127.0.0.1 for a moment, sends itself a few requests with reqwest, prints the answers
//! and exits. A refused request is a `503 Service Unavailable` with a `Retry-After` header and a
//! body that names nothing inside the service.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use resiliency::{too_busy, Rejected};

/// A slow report: at most two are rendered at once, a third concurrent request is refused at once.
/// A handler returning `impl IntoResponse` (or `Response`) needs no error type: the refusal is the
/// response `resiliency::http` makes of it.
#[too_busy(max_in_flight = 2)]
async fn report() -> impl IntoResponse {
    tokio::time::sleep(Duration::from_millis(300)).await;
    "the report"
}

/// The application's error type. `#[too_busy]` refuses through `From<Rejected>`; the response of
/// a refusal is the one `Rejected` itself makes.
enum AppError {
    Refused(Rejected),
    NotFound,
}

impl From<Rejected> for AppError {
    fn from(rejected: Rejected) -> Self {
        AppError::Refused(rejected)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Refused(rejected) => rejected.into_response(),
            AppError::NotFound => (StatusCode::NOT_FOUND, "no such item").into_response(),
        }
    }
}

/// Refused while the runtime lags more than 50ms (never here: the server is idle).
#[too_busy(max_lag = "50ms")]
async fn item(axum::extract::Path(id): axum::extract::Path<u32>) -> Result<String, AppError> {
    if id == 0 {
        return Err(AppError::NotFound);
    }
    Ok(format!("item {id}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = Router::new()
        .route("/report", get(report))
        .route("/item/{id}", get(item));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    println!("serving on {base}");

    let client = reqwest::Client::new();
    for path in ["/item/7", "/item/0"] {
        let response = client.get(format!("{base}{path}")).send().await?;
        println!(
            "GET {path} -> {} {:?}",
            response.status(),
            response.text().await?
        );
    }

    // Three reports at once: two are admitted, the third is refused without waiting.
    println!("three concurrent GET /report (max_in_flight = 2):");
    let get_report = || async {
        let response = client.get(format!("{base}/report")).send().await?;
        let status = response.status();
        let retry_after = response.headers().get("retry-after").cloned();
        let body = response.text().await?;
        Ok::<_, reqwest::Error>((status, retry_after, body))
    };
    let (a, b, c) = tokio::join!(get_report(), get_report(), get_report());
    for (status, retry_after, body) in [a?, b?, c?] {
        match retry_after {
            Some(seconds) => println!("  {status}, Retry-After: {seconds:?}, body {body:?}"),
            None => println!("  {status}, body {body:?}"),
        }
    }

    server.abort();
    Ok(())
}
