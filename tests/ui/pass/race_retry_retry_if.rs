use std::sync::atomic::{AtomicU32, Ordering};

use resilient::{race_retry, Rejected};

#[derive(Debug)]
enum FetchError {
    NotFound,
    Unavailable,
    Refused(Rejected),
}

impl From<Rejected> for FetchError {
    fn from(r: Rejected) -> Self {
        FetchError::Refused(r)
    }
}

fn is_transient(e: &FetchError) -> bool {
    match e {
        FetchError::NotFound => false,
        FetchError::Unavailable => true,
        FetchError::Refused(r) => r.is_too_busy(),
    }
}

static BY_PATH: AtomicU32 = AtomicU32::new(0);
static BY_CLOSURE: AtomicU32 = AtomicU32::new(0);
static BY_UNTYPED_CLOSURE: AtomicU32 = AtomicU32::new(0);

#[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = is_transient)]
async fn by_path(not_found: bool) -> Result<u32, FetchError> {
    BY_PATH.fetch_add(1, Ordering::Relaxed);
    Err(if not_found { FetchError::NotFound } else { FetchError::Unavailable })
}

#[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = |e: &FetchError| !matches!(e, FetchError::NotFound))]
async fn by_closure(not_found: bool) -> Result<u32, FetchError> {
    BY_CLOSURE.fetch_add(1, Ordering::Relaxed);
    Err(if not_found { FetchError::NotFound } else { FetchError::Unavailable })
}

// The closure's parameter type is learned from the fn's error type.
#[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = |e| !matches!(e, FetchError::NotFound))]
async fn by_untyped_closure(not_found: bool) -> Result<u32, FetchError> {
    BY_UNTYPED_CLOSURE.fetch_add(1, Ordering::Relaxed);
    Err(if not_found { FetchError::NotFound } else { FetchError::Unavailable })
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    // A miss is not worth another attempt: one attempt.
    assert!(matches!(by_path(true).await, Err(FetchError::NotFound)));
    assert_eq!(BY_PATH.load(Ordering::Relaxed), 1);
    // An outage is: three attempts, and the last error.
    assert!(matches!(by_path(false).await, Err(FetchError::Unavailable)));
    assert_eq!(BY_PATH.load(Ordering::Relaxed), 4);

    assert!(matches!(by_closure(true).await, Err(FetchError::NotFound)));
    assert_eq!(BY_CLOSURE.load(Ordering::Relaxed), 1);
    assert!(matches!(by_closure(false).await, Err(FetchError::Unavailable)));
    assert_eq!(BY_CLOSURE.load(Ordering::Relaxed), 4);

    assert!(matches!(by_untyped_closure(true).await, Err(FetchError::NotFound)));
    assert_eq!(BY_UNTYPED_CLOSURE.load(Ordering::Relaxed), 1);
    assert!(matches!(by_untyped_closure(false).await, Err(FetchError::Unavailable)));
    assert_eq!(BY_UNTYPED_CLOSURE.load(Ordering::Relaxed), 4);
}
