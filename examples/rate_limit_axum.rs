//! `#[rate_limit]` on an axum handler: a client that sends too much gets `429 Too Many Requests`
//! with a `Retry-After` header, and is served again once it waits that long.
//!
//! ```text
//! cargo run --example rate_limit_axum --features axum
//! ```
//!
//! Serves on 127.0.0.1 for a moment, sends itself requests with reqwest, prints the answers and
//! exits.

use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use resiliency::{rate_limit, Rejected};

/// Two requests a second, spaced evenly (`burst = 1`): a request less than 500 ms after the last
/// one admitted is refused with the time until its permit as `Retry-After` (whole seconds, rounded
/// up). `Rejected` is the response.
#[rate_limit(rate = "2/s", burst = 1)]
async fn quote() -> Result<String, Rejected> {
    Ok("ACME 42.00".to_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = Router::new().route("/quote", get(quote));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/quote", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut retry_after = 0;
    for n in 1..=3 {
        let response = client.get(&url).send().await?;
        let status = response.status();
        let header = response.headers().get("retry-after").cloned();
        let body = response.text().await?;
        println!(
            "request {n} at {:>4.0?}: {status}, retry-after {header:?}: {}",
            started.elapsed(),
            body.trim()
        );
        if let Some(seconds) = header.and_then(|h| h.to_str().ok()?.parse().ok()) {
            retry_after = seconds;
        }
    }
    println!("waiting the {retry_after} s the server asked for");
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    let response = client.get(&url).send().await?;
    println!(
        "request 4 at {:>4.0?}: {}",
        started.elapsed(),
        response.status()
    );
    Ok(())
}
