use resilient::{breaker, Rejected};

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
    matches!(e, FetchError::Unavailable)
}

#[breaker(error_threshold = 1, error_timeout = "30s", count_if = is_transient)]
async fn fetch(e: Option<FetchError>) -> Result<u32, FetchError> {
    match e {
        Some(e) => Err(e),
        None => Ok(1),
    }
}

#[breaker(error_threshold = 1, count_if = |e: &FetchError| !matches!(e, FetchError::NotFound))]
async fn fetch_closure(e: Option<FetchError>) -> Result<u32, FetchError> {
    match e {
        Some(e) => Err(e),
        None => Ok(2),
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    // A miss does not count: the breaker stays closed.
    assert!(matches!(fetch(Some(FetchError::NotFound)).await, Err(FetchError::NotFound)));
    assert_eq!(fetch(None).await.unwrap(), 1);
    // An outage does: the breaker opens.
    assert!(matches!(fetch(Some(FetchError::Unavailable)).await, Err(FetchError::Unavailable)));
    assert!(matches!(fetch(None).await, Err(FetchError::Refused(r)) if r.is_circuit_open()));

    assert!(fetch_closure(Some(FetchError::NotFound)).await.is_err());
    assert_eq!(fetch_closure(None).await.unwrap(), 2);
}
