use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilient::{race_retry, Rejected};

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

// Until it has seen enough attempts, a percentile `after` waits `total / (retries + 1)`.
#[race_retry(retries = 2, after = "p99.9", total = "600ms")]
async fn fetch() -> Result<u32, Rejected> {
    let slow = ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0;
    tokio::time::sleep(Duration::from_millis(if slow { 5_000 } else { 10 })).await;
    Ok(1)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let started = tokio::time::Instant::now();
    assert_eq!(fetch().await.unwrap(), 1);
    assert_eq!(started.elapsed(), Duration::from_millis(210));
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 2);
}
