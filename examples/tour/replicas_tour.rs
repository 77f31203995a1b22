//! 8. Fallbacks, and hedging to another replica (HTTP on 127.0.0.1).
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resiliency::{race_retry, Rejected};

use super::{show, AppError};

// ------------------------------------------------------------------------------------------------
// 8. Fallbacks, and hedging to another replica (HTTP on 127.0.0.1)
// ------------------------------------------------------------------------------------------------

/// Two replicas of one service, each an HTTP server on 127.0.0.1 whose requests take `delay_ms`
/// (one of them slow), changeable while it runs.
struct Replicas {
    client: reqwest::Client,
    bases: Vec<String>,
}

impl Replicas {
    /// Starts replica `name` answering in `delay_ms`; returns its base URL.
    async fn serve(name: &'static str, delay_ms: Arc<AtomicU64>) -> std::io::Result<String> {
        let app = axum::Router::new().route(
            "/user/{id}",
            axum::routing::get(
                move |axum::extract::Path(id): axum::extract::Path<u64>| async move {
                    let delay = delay_ms.load(Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    format!("user {id} from {name}")
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(base)
    }

    /// The fallback: what a refused call returns instead, with the call's arguments and why.
    async fn cached(&self, id: u64, why: Rejected) -> Result<String, AppError> {
        Ok(format!("user {id} from the cache ({why})"))
    }

    /// Attempt `n` goes to replica `n % 2`: the hedge at 100ms goes to the other replica, as "The
    /// Tail at Scale" sends it. When the race's deadline passes, the fallback answers.
    #[race_retry(retries = 1, after = "100ms", total = "400ms", attempt = n, fallback = Self::cached)]
    async fn user(&self, id: u64) -> Result<String, AppError> {
        let base = &self.bases[n as usize % self.bases.len()];
        let response = self
            .client
            .get(format!("{base}/user/{id}"))
            .send()
            .await
            .map_err(|_| AppError::Upstream("no answer"))?;
        response
            .text()
            .await
            .map_err(|_| AppError::Upstream("a broken answer"))
    }
}

pub(super) async fn run() -> std::io::Result<()> {
    println!("\n8. Hedging to another replica, and a fallback (HTTP servers on 127.0.0.1)");
    println!("   #[race_retry(retries = 1, after = \"100ms\", total = \"400ms\", attempt = n, fallback = Self::cached)]");
    let (a_delay, b_delay) = (
        Arc::new(AtomicU64::new(2_000)),
        Arc::new(AtomicU64::new(20)),
    );
    let replicas = Replicas {
        client: reqwest::Client::new(),
        bases: vec![
            Replicas::serve("replica-a", a_delay.clone()).await?,
            Replicas::serve("replica-b", b_delay.clone()).await?,
        ],
    };
    println!("  replica-a takes 2s, replica-b 20ms: attempt 0 goes to a, the hedge at 100ms to b");
    let started = Instant::now();
    let (result, mut attempts) = race_retry::observe(replicas.user(1)).await;
    show("replicas.user(1)", &result, started.elapsed());
    attempts.sort_by_key(|a| a.number);
    for a in attempts {
        println!(
            "    attempt {} (n = {}) started at {:>5.0?}, ran {:>5.0?}: {}",
            a.number,
            a.number - 1,
            a.started,
            a.elapsed,
            a.outcome
        );
    }
    b_delay.store(2_000, Ordering::SeqCst);
    println!("  both replicas take 2s: at 400ms the race is refused, and the fallback answers");
    let started = Instant::now();
    show(
        "replicas.user(2)",
        &replicas.user(2).await,
        started.elapsed(),
    );
    Ok(())
}
