use std::time::Duration;

use resilient::{too_busy, Rejected, RejectedKind};

#[too_busy(max_in_flight = 1)]
async fn slow(ms: u64) -> Result<u64, Rejected> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(ms)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (a, b) = tokio::join!(slow(20), slow(10));
    assert_eq!(a.unwrap(), 20);
    let refused = b.unwrap_err();
    assert!(refused.is_too_busy());
    assert_eq!(refused.kind(), RejectedKind::TooBusy);
    assert!(refused.name().ends_with("slow"), "{}", refused.name());
    assert!(refused.to_string().contains("max_in_flight 1"), "{refused}");
    // The slot is free again once the first call has finished.
    assert_eq!(slow(1).await.unwrap(), 1);
}
