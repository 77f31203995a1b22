use resilient::{breaker, Rejected};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[breaker(key = host, error_threshold = 1, error_timeout = "30s")]
async fn get(host: &str, ok: bool) -> Result<String, BoxError> {
    if ok {
        Ok(format!("{host}: 200"))
    } else {
        Err("503".into())
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert!(get("a", false).await.is_err());
    // `a` is open now; `b` has a breaker of its own.
    let refused = get("a", true).await.unwrap_err();
    let refused = refused.downcast_ref::<Rejected>().unwrap();
    assert!(refused.is_circuit_open());
    assert_eq!(refused.key(), Some("a"));
    assert_eq!(get("b", true).await.unwrap(), "b: 200");
}
