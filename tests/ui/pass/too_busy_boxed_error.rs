use std::error::Error;

use resilient::{too_busy, Rejected};

#[too_busy]
async fn fetch(ok: bool) -> Result<&'static str, Box<dyn Error + Send + Sync>> {
    if ok {
        Ok("data")
    } else {
        Err("upstream failed".into())
    }
}

#[too_busy(max_in_flight = 1)]
async fn exclusive() -> Result<(), Box<dyn Error + Send + Sync>> {
    tokio::task::yield_now().await;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(fetch(true).await.unwrap(), "data");
    assert_eq!(fetch(false).await.unwrap_err().to_string(), "upstream failed");
    let (a, b) = tokio::join!(exclusive(), exclusive());
    assert!(a.is_ok());
    let refused = b.unwrap_err();
    assert!(refused.downcast_ref::<Rejected>().unwrap().is_too_busy());
}
