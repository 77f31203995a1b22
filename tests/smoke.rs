use resilient::{breaker, Rejected};
type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[breaker(error_threshold = 2, error_timeout = "30s")]
async fn fetch(ok: bool) -> Result<&'static str, BoxError> {
    if ok {
        Ok("data")
    } else {
        Err("upstream failed".into())
    }
}

struct Client {
    base: String,
}
impl Client {
    #[breaker(key = host, timeout = "1s")]
    async fn get<T: Clone + Send>(
        &self,
        host: &str,
        x: T,
        path: impl AsRef<str>,
    ) -> anyhow::Result<(T, String)>
    where
        T: 'static,
    {
        Ok((x, format!("{}{}{}", self.base, host, path.as_ref())))
    }
}

#[tokio::test(start_paused = true)]
async fn smoke() {
    assert!(fetch(false).await.is_err());
    assert!(fetch(false).await.is_err());
    let refused = fetch(true).await.unwrap_err();
    assert!(refused
        .downcast_ref::<Rejected>()
        .unwrap()
        .is_circuit_open());
    let c = Client {
        base: "http://".into(),
    };
    let s = c.get("a", 5u8, "/x").await.unwrap();
    assert_eq!(s.1, "http://a/x");
}
