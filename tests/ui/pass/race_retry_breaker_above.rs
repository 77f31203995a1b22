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

// Written `#[breaker]` first, so the breaker is the outer layer: it sees one outcome per call (the
// race's), and once open it refuses a call before any attempt.
#[breaker(error_threshold = 1, error_timeout = "30s")]
#[race_retry(retries = 2, after = "100ms", total = "1s")]
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
    // Three attempts fail; the breaker counts the call's one error and opens.
    assert!(matches!(fetch(false).await, Err(FetchError::Down)));
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 4);
    // The open breaker refuses the next call before any attempt.
    let refused = fetch(true).await;
    assert!(matches!(&refused, Err(FetchError::Refused(r)) if r.is_circuit_open()), "{refused:?}");
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 4);
}
