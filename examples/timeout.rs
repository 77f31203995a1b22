//! `#[timeout]` over real HTTP: a client bounds each request at 200ms; the server, on 127.0.0.1,
//! sees a request cut off as its connection closing, because the request's future (the body the
//! time limit dropped) is gone.
//!
//! ```text
//! cargo run --example timeout
//! ```

use std::time::{Duration, Instant};

use resiliency::timeout;

struct Prices {
    client: reqwest::Client,
    base: String,
}

impl Prices {
    /// One request, at most 200ms; its remaining time travels as a header.
    #[timeout("200ms")]
    async fn price(&self, symbol: &str) -> anyhow::Result<String> {
        let left = resiliency::time_left().unwrap_or(Duration::from_secs(30));
        let response = self
            .client
            .get(format!("{}/price/{symbol}", self.base))
            .header("x-timeout-ms", left.as_millis().to_string())
            .send()
            .await?;
        Ok(response.error_for_status()?.text().await?)
    }
}

/// Notes on the server's side whether a request ran to its end or was dropped with its caller.
struct Finished(&'static str, bool);

impl Drop for Finished {
    fn drop(&mut self) {
        if !self.1 {
            println!(
                "  server: the caller of {} went away; its work stops here",
                self.0
            );
        }
    }
}

/// The server: `SLOW` takes 1s, anything else 20ms.
async fn serve() -> std::io::Result<String> {
    let app = axum::Router::new().route(
        "/price/{symbol}",
        axum::routing::get(
            |axum::extract::Path(symbol): axum::extract::Path<String>| async move {
                let slow = symbol == "SLOW";
                let mut finished = Finished(if slow { "SLOW" } else { "a quick one" }, false);
                tokio::time::sleep(Duration::from_millis(if slow { 1000 } else { 20 })).await;
                finished.1 = true;
                format!("{symbol}: 42.00")
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
    let prices = Prices {
        client: reqwest::Client::new(),
        base: serve().await?,
    };
    for symbol in ["ACME", "SLOW"] {
        println!("prices.price({symbol:?}):");
        let started = Instant::now();
        match prices.price(symbol).await {
            Ok(price) => println!("  -> Ok({price:?}) in {:.0?}", started.elapsed()),
            Err(error) => {
                let timed_out = resiliency::Rejected::find_in(error.as_ref())
                    .is_some_and(resiliency::Rejected::is_timeout);
                println!(
                    "  -> Err({error}) in {:.0?}; a timeout: {timed_out}",
                    started.elapsed()
                );
            }
        }
    }
    // Give the server a moment to notice the closed connection.
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(())
}
