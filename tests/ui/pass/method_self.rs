use resilient::{breaker, Rejected};

struct Client {
    base: String,
}

impl Client {
    #[breaker(error_threshold = 2)]
    async fn get(&self, path: &str) -> Result<String, Rejected> {
        Ok(format!("{}{path}", self.base))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = Client { base: "http://127.0.0.1".into() };
    assert_eq!(client.get("/a").await.unwrap(), "http://127.0.0.1/a");
}
