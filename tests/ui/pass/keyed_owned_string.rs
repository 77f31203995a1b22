use resilient::{breaker, Rejected};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

// The key is read before the body runs; the body then moves `host`.
#[breaker(key = host, error_threshold = 1, error_timeout = "30s")]
async fn get(host: String, ok: bool) -> Result<String, BoxError> {
    if ok {
        let owned: String = host;
        Ok(owned)
    } else {
        Err(format!("{host} failed").into())
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(get("a".to_string(), true).await.unwrap(), "a");
    assert_eq!(get("a".to_string(), false).await.unwrap_err().to_string(), "a failed");
    let refused = get("a".to_string(), true).await.unwrap_err();
    assert_eq!(refused.downcast_ref::<Rejected>().unwrap().key(), Some("a"));
    assert_eq!(get("b".to_string(), true).await.unwrap(), "b");
}
