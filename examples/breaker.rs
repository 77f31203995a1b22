//! A client method behind a circuit breaker, against a real HTTP server on 127.0.0.1.
//!
//! ```text
//! cargo run --example breaker
//! ```
//!
//! The server answers 500 once it is told to fail. Three errors open the breaker; while open, calls
//! are refused at once without reaching the server; after `error_timeout` one probe goes through,
//! and a successful probe closes it again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::{breaker, Rejected};

#[derive(Debug)]
enum StockError {
    /// The breaker refused the call, or abandoned it after `timeout`.
    Rejected(Rejected),
    Http(reqwest::Error),
}

impl From<Rejected> for StockError {
    fn from(rejected: Rejected) -> Self {
        StockError::Rejected(rejected)
    }
}

impl From<reqwest::Error> for StockError {
    fn from(error: reqwest::Error) -> Self {
        StockError::Http(error)
    }
}

impl std::fmt::Display for StockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StockError::Rejected(rejected) => rejected.fmt(f),
            StockError::Http(error) => match error.status() {
                Some(status) => write!(f, "the server answered {status}"),
                None => write!(f, "request failed: {error}"),
            },
        }
    }
}

struct Inventory {
    client: reqwest::Client,
    base: String,
}

impl Inventory {
    /// A call taking more than 250ms is abandoned and counts as an error. With `capacity = 0.8`
    /// the breaker stays open `250ms * 0.8 / 0.2 = 1s` after the last error.
    #[breaker(name = "inventory", capacity = 0.8, timeout = "250ms")]
    async fn stock(&self, item: &str) -> Result<String, StockError> {
        let response = self
            .client
            .get(format!("{}/stock/{item}", self.base))
            .send()
            .await?;
        Ok(response.error_for_status()?.text().await?)
    }
}

/// The server: `42` in stock, or a 500 while `failing` is set.
async fn serve(failing: Arc<AtomicBool>) -> std::io::Result<String> {
    use axum::http::StatusCode;
    let app = axum::Router::new().route(
        "/stock/{item}",
        axum::routing::get(move || async move {
            if failing.load(Ordering::SeqCst) {
                (StatusCode::INTERNAL_SERVER_ERROR, "database down")
            } else {
                (StatusCode::OK, "42")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

async fn call(inventory: &Inventory) {
    match inventory.stock("widget").await {
        Ok(stock) => println!("  stock(\"widget\") -> Ok({stock})"),
        Err(error) => println!("  stock(\"widget\") -> Err({error})"),
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let failing = Arc::new(AtomicBool::new(false));
    let inventory = Inventory {
        client: reqwest::Client::new(),
        base: serve(failing.clone()).await?,
    };
    breaker::subscribe(|change| println!("  >> {}: {} -> {}", change.name, change.from, change.to));

    call(&inventory).await;
    // Registered under its name by the first call: read (or force) its state from anywhere.
    let handle = breaker::get("inventory").expect("registered by the first call");
    println!(
        "state: {}, error_timeout: {:?}",
        handle.state(),
        handle.error_timeout()
    );

    println!("the server fails:");
    failing.store(true, Ordering::SeqCst);
    for _ in 0..4 {
        call(&inventory).await;
    }
    let snapshot = handle.snapshot();
    println!(
        "state: {}, half-opens in {:?}",
        snapshot.state, snapshot.half_opens_in
    );

    println!("the server recovers; after error_timeout one probe is let through:");
    failing.store(false, Ordering::SeqCst);
    tokio::time::sleep(snapshot.half_opens_in.unwrap_or_default() + Duration::from_millis(10))
        .await;
    call(&inventory).await;
    println!("state: {}", handle.state());
    Ok(())
}
