//! A client method with raced retries under one deadline, against a real HTTP server on 127.0.0.1.
//!
//! ```text
//! cargo run --example race_retry
//! ```
//!
//! Some requests hang on the server (a slow disk, a GC pause). A retry does not abort the attempt
//! in flight: it races it, the first `Ok` wins and the others are cancelled before the call
//! returns. `total` bounds the whole call.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resiliency::race_retry;

struct Users {
    client: reqwest::Client,
    base: String,
}

impl Users {
    /// Attempt 2 starts 150ms after attempt 1 (sooner if one fails), attempt 3 150ms after that;
    /// at 450ms the call returns a deadline error. `anyhow::Error` is `From<Rejected>` already.
    #[race_retry(retries = 2, after = "150ms", total = "450ms")]
    async fn lookup(&self, id: u64) -> anyhow::Result<String> {
        let url = format!("{}/user/{id}", self.base);
        let response = self.client.get(url).send().await?;
        Ok(response.error_for_status()?.text().await?)
    }
}

/// The server: the next `hang` requests take 5s, the others 20ms. Each answer says which request
/// it was, so the output shows which attempt won.
async fn serve(hang: Arc<AtomicU32>) -> std::io::Result<String> {
    let served = Arc::new(AtomicU32::new(0));
    let app = axum::Router::new().route(
        "/user/{id}",
        axum::routing::get(
            move |axum::extract::Path(id): axum::extract::Path<u64>| async move {
                let n = served.fetch_add(1, Ordering::SeqCst) + 1;
                let slow =
                    hang.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| h.checked_sub(1));
                let delay = if slow.is_ok() { 5000 } else { 20 };
                tokio::time::sleep(Duration::from_millis(delay)).await;
                format!("user {id} (request #{n})")
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

/// One call, with every attempt `race_retry::observe` saw (winner and cancelled ones).
async fn lookup(users: &Users, id: u64) {
    let started = Instant::now();
    let (result, mut attempts) = race_retry::observe(users.lookup(id)).await;
    match result {
        Ok(user) => println!("lookup({id}) -> Ok({user:?}) in {:.0?}", started.elapsed()),
        Err(error) => println!("lookup({id}) -> Err({error}) in {:.0?}", started.elapsed()),
    }
    attempts.sort_by_key(|attempt| attempt.number);
    for attempt in attempts {
        println!(
            "  attempt {}: started at {:.0?}, ran {:.0?}, {}",
            attempt.number, attempt.started, attempt.elapsed, attempt.outcome
        );
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let hang = Arc::new(AtomicU32::new(0));
    let users = Users {
        client: reqwest::Client::new(),
        base: serve(hang.clone()).await?,
    };

    println!("a healthy server:");
    lookup(&users, 1).await;
    println!("the first request hangs:");
    hang.store(1, Ordering::SeqCst);
    lookup(&users, 2).await;
    println!("every request hangs:");
    hang.store(3, Ordering::SeqCst);
    lookup(&users, 3).await;

    // Stats per fn, registered by its full path; extra attempts are bounded by the retry budget.
    for name in race_retry::names() {
        if let Some(stats) = race_retry::stats(name) {
            println!(
                "race_retry::stats({name:?}): {} extra attempts, {} calls won by one, {} refused by the budget, {} deadline(s)",
                stats.extra_attempts, stats.won_by_extra, stats.budget_refused, stats.deadlines
            );
        }
    }
    Ok(())
}
