use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilient::{race_retry, Rejected};

#[derive(Debug)]
enum FetchError {
    NotFound,
    Refused(Rejected),
}

impl From<Rejected> for FetchError {
    fn from(r: Rejected) -> Self {
        FetchError::Refused(r)
    }
}

fn is_transient(e: &FetchError) -> bool {
    !matches!(e, FetchError::NotFound)
}

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

#[race_retry(
    retries = 2,
    after = "150ms",
    total = "450ms",
    each = "300ms",
    budget = 0.1,
    backoff = "20ms",
    backoff_factor = 3,
    backoff_max = "100ms",
    retry_if = is_transient,
    crate = "::resilient",
)]
async fn fetch(id: u64, hang: bool) -> Result<u64, FetchError> {
    // The very first attempt hangs (or every one, with `hang`); the others answer in 20 ms.
    let first = ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0;
    tokio::time::sleep(Duration::from_millis(if first || hang { 5_000 } else { 20 })).await;
    if id == 0 {
        return Err(FetchError::NotFound);
    }
    Ok(id)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    // The second attempt starts after 150 ms and wins at 170 ms.
    let started = tokio::time::Instant::now();
    assert_eq!(fetch(7, false).await.unwrap(), 7);
    assert_eq!(started.elapsed(), Duration::from_millis(170));

    // A miss is not worth another attempt.
    assert!(matches!(fetch(0, false).await, Err(FetchError::NotFound)));

    // Attempts start at 0, 150 and 300 ms (when the first one passes `each`); none answers by
    // the deadline.
    let started = tokio::time::Instant::now();
    let late = fetch(7, true).await;
    assert!(matches!(&late, Err(FetchError::Refused(r)) if r.is_deadline()), "{late:?}");
    assert_eq!(started.elapsed(), Duration::from_millis(450));
}
