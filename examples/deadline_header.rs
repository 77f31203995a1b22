//! A deadline that travels: a client under `#[race_retry]` (inside `#[breaker(timeout)]`) sends
//! the time its call has left as a header, and the server, on 127.0.0.1, gives up on work the
//! caller will no longer wait for.
//!
//! ```text
//! cargo run --example deadline_header
//! ```
//!
//! `resiliency::time_left()` is the soonest deadline of the guards around the code: here the
//! breaker's `timeout` of 400ms and, for each attempt, the race's `total` of 1s. Every attempt
//! sends what is left of it as `x-timeout-ms`, as gRPC sends `grpc-timeout`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use resiliency::{breaker, race_retry};

/// The header a caller's remaining time travels in.
const TIMEOUT_HEADER: &str = "x-timeout-ms";

struct Catalog {
    client: reqwest::Client,
    base: String,
}

impl Catalog {
    /// The breaker bounds the whole call at 400ms; the race retries at 150ms within it.
    #[breaker(name = "catalog", timeout = "400ms")]
    #[race_retry(retries = 1, after = "150ms", total = "1s")]
    async fn item(&self, id: u64) -> anyhow::Result<String> {
        let left = resiliency::time_left().unwrap_or(Duration::from_secs(30));
        let response = self
            .client
            .get(format!("{}/item/{id}", self.base))
            .header(TIMEOUT_HEADER, left.as_millis().to_string())
            .send()
            .await?;
        Ok(response.error_for_status()?.text().await?)
    }
}

/// The server: every other request takes 300ms (every request for item 3), the others 20ms. It
/// reads the caller's remaining time, and answers 504 at once when the work would not fit in it.
async fn serve() -> std::io::Result<String> {
    let requests = Arc::new(AtomicU32::new(0));
    let app = axum::Router::new().route(
        "/item/{id}",
        axum::routing::get(
            move |axum::extract::Path(id): axum::extract::Path<u64>, headers: HeaderMap| async move {
                let n = requests.fetch_add(1, Ordering::SeqCst);
                let budget = headers
                    .get(TIMEOUT_HEADER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.parse::<u64>().ok())
                    .map(Duration::from_millis);
                let work = if n.is_multiple_of(2) || id == 3 { 300 } else { 20 };
                let work = Duration::from_millis(work);
                println!("  server: request #{n} for item {id}, {TIMEOUT_HEADER}: {budget:?}, work {work:?}");
                if budget.is_some_and(|budget| budget < work) {
                    println!("  server: request #{n} would outlive its caller: 504 at once");
                    return Err(axum::http::StatusCode::GATEWAY_TIMEOUT);
                }
                tokio::time::sleep(work).await;
                Ok(format!("item {id} (request #{n})"))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let catalog = Catalog {
        client: reqwest::Client::new(),
        base: serve().await?,
    };
    for id in [1, 3] {
        println!("catalog.item({id}):");
        let started = Instant::now();
        match catalog.item(id).await {
            Ok(item) => println!("  -> Ok({item:?}) in {:.0?}", started.elapsed()),
            Err(error) => println!("  -> Err({error}) in {:.0?}", started.elapsed()),
        }
    }
    Ok(())
}
