use resilient::{too_busy, Rejected};

// Written `#[breaker]` first, so the breaker is the outer layer: it sees what the guard returns,
// and a refusal by the guard is an error like any other (here it opens the breaker).
#[resilient::breaker(error_threshold = 1, error_timeout = "30s")]
#[too_busy(max_in_flight = 1)]
async fn fetch(n: u32) -> Result<u32, Rejected> {
    tokio::task::yield_now().await;
    Ok(n * 2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(fetch(2).await.unwrap(), 4);
    let (a, b) = tokio::join!(fetch(1), fetch(2));
    assert_eq!(a.unwrap(), 2);
    assert!(b.unwrap_err().is_too_busy());
    // The breaker counted the refusal: the next call is refused by the breaker.
    let refused = fetch(3).await.unwrap_err();
    assert!(refused.is_circuit_open(), "{refused}");
}
