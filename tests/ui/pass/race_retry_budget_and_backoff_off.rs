// `budget = "off"` and `backoff = "off"`: every extra attempt is made, and a failed attempt's
// replacement starts at once.
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilient::{race_retry, Rejected};

#[derive(Debug)]
enum FetchError {
    Down,
    #[allow(dead_code)]
    Refused(Rejected),
}

impl From<Rejected> for FetchError {
    fn from(r: Rejected) -> Self {
        FetchError::Refused(r)
    }
}

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

#[race_retry(retries = 2, after = "150ms", total = "450ms", budget = "off", backoff = "off")]
async fn fetch() -> Result<u32, FetchError> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    ATTEMPTS.fetch_add(1, Ordering::Relaxed);
    Err(FetchError::Down)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    // 30 calls, every attempt failing after 10 ms: 3 attempts each, 10 ms apart, none refused.
    for _ in 0..30 {
        let started = tokio::time::Instant::now();
        assert!(matches!(fetch().await, Err(FetchError::Down)));
        assert_eq!(started.elapsed(), Duration::from_millis(30));
    }
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 90);
}
