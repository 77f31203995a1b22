use resilient::{breaker, Rejected};

#[breaker(error_threshold = 1, error_timeout = "30s")]
async fn fetch(ok: bool) -> anyhow::Result<u32> {
    if ok {
        Ok(7)
    } else {
        anyhow::bail!("upstream failed")
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(fetch(true).await.unwrap(), 7);
    assert_eq!(fetch(false).await.unwrap_err().to_string(), "upstream failed");
    let refused = fetch(true).await.unwrap_err();
    assert!(refused.downcast_ref::<Rejected>().unwrap().is_circuit_open());
}
