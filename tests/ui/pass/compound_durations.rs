// Durations may be compound: parts from the largest unit to the smallest, each once.
use std::time::Duration;

use resilient::{breaker, race_retry, too_busy, Rejected};

#[breaker(name = "compound", error_timeout = "1m30s", timeout = "2m 30s")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

#[race_retry(retries = 1, after = "1m", total = "1h2m3s4ms")]
async fn hang() -> Result<u32, Rejected> {
    std::future::pending().await
}

#[too_busy(max_lag = "1s500ms", max_latency = "1m0.5s")]
async fn handle() -> Result<u32, Rejected> {
    Ok(2)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(charge().await.unwrap(), 1);
    let breaker = resilient::breaker::get("compound").unwrap();
    assert_eq!(breaker.error_timeout(), Duration::from_secs(90));

    let start = tokio::time::Instant::now();
    assert!(hang().await.unwrap_err().is_deadline());
    assert_eq!(start.elapsed(), Duration::from_millis(3_723_004));

    assert_eq!(handle().await.unwrap(), 2);
}
