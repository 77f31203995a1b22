use resilient::{breaker, Rejected};

trait Store {
    async fn load(&self, id: u64) -> Result<String, Rejected>;
}

struct Memory {
    prefix: &'static str,
}

impl Store for Memory {
    #[breaker(error_threshold = 2)]
    async fn load(&self, id: u64) -> Result<String, Rejected> {
        Ok(format!("{}{id}", self.prefix))
    }
}

async fn load_via<S: Store>(store: &S, id: u64) -> Result<String, Rejected> {
    store.load(id).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let store = Memory { prefix: "row-" };
    assert_eq!(store.load(1).await.unwrap(), "row-1");
    assert_eq!(load_via(&store, 2).await.unwrap(), "row-2");
}
