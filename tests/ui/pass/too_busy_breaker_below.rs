use resilient::{too_busy, Rejected};

// Written `#[too_busy]` first, so the guard is the outer layer: a call it refuses never reaches
// the breaker, so load shedding cannot open the circuit.
#[too_busy(max_in_flight = 1)]
#[resilient::breaker(error_threshold = 1, error_timeout = "30s")]
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
    // error_threshold = 1 would have opened the breaker had it seen the refusal.
    let after = fetch(3).await;
    assert_eq!(after.as_ref().ok(), Some(&6), "{after:?}");
}
