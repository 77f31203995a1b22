use resilient::{too_busy, Rejected};

struct Client {
    base: String,
}

impl Client {
    #[too_busy(max_in_flight = 1)]
    async fn get(&self, path: &str) -> Result<String, Rejected> {
        tokio::task::yield_now().await;
        Ok(format!("{}{path}", self.base))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = Client { base: "http://127.0.0.1".into() };
    assert_eq!(client.get("/a").await.unwrap(), "http://127.0.0.1/a");
    let (a, b) = tokio::join!(client.get("/a"), client.get("/b"));
    assert_eq!(a.unwrap(), "http://127.0.0.1/a");
    assert!(b.unwrap_err().is_too_busy());
}
