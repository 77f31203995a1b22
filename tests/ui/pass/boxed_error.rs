use resilient::{breaker, Rejected};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[breaker(error_threshold = 1, error_timeout = "30s")]
async fn fetch(ok: bool) -> Result<&'static str, BoxError> {
    if ok {
        Ok("data")
    } else {
        Err("upstream failed".into())
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(fetch(true).await.unwrap(), "data");
    assert!(fetch(false).await.is_err());
    let refused = fetch(true).await.unwrap_err();
    assert!(refused.downcast_ref::<Rejected>().unwrap().is_circuit_open());
}
