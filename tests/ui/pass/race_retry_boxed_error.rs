use std::error::Error;
use std::time::Duration;

use resilient::{race_retry, Rejected};

#[race_retry(retries = 2, after = "100ms", total = "450ms")]
async fn fetch(wait_ms: u64) -> Result<u64, Box<dyn Error + Send + Sync>> {
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    if wait_ms == 0 {
        return Err("upstream failed".into());
    }
    Ok(wait_ms)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(fetch(10).await.unwrap(), 10);
    assert_eq!(fetch(0).await.unwrap_err().to_string(), "upstream failed");
    let late = fetch(1_000).await.unwrap_err();
    assert!(late.downcast_ref::<Rejected>().unwrap().is_deadline(), "{late}");
}
