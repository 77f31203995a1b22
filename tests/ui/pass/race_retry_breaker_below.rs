use std::sync::atomic::{AtomicU32, Ordering};

use resilient::{breaker, race_retry, Rejected};

#[derive(Debug)]
enum FetchError {
    Down,
    Refused(Rejected),
}

impl From<Rejected> for FetchError {
    fn from(r: Rejected) -> Self {
        FetchError::Refused(r)
    }
}

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

// Written `#[race_retry]` first, so the breaker is the inner layer, around each attempt: the first
// attempt's error opens it, and the retries are refused by it at once.
#[race_retry(retries = 2, after = "100ms", total = "1s")]
#[breaker(error_threshold = 1, error_timeout = "30s")]
async fn fetch(ok: bool) -> Result<u32, FetchError> {
    ATTEMPTS.fetch_add(1, Ordering::Relaxed);
    if ok {
        Ok(1)
    } else {
        Err(FetchError::Down)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(fetch(true).await.unwrap(), 1);
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 1);
    // The first attempt fails and opens the breaker; the two retries never reach the body.
    let refused = fetch(false).await;
    assert!(matches!(&refused, Err(FetchError::Refused(r)) if r.is_circuit_open()), "{refused:?}");
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 2);
}
