use std::future::Future;

use resilient::{race_retry, Rejected};

trait Store {
    async fn load(&self, id: u64) -> Result<String, Rejected>;
}

// A trait that asks for a `Send` future, as `tokio::spawn`ing callers do.
trait SendStore {
    fn count(&self, table: &str) -> impl Future<Output = Result<usize, Rejected>> + Send;
}

struct Memory {
    prefix: &'static str,
}

impl Store for Memory {
    #[race_retry(retries = 1, after = "100ms", total = "1s")]
    async fn load(&self, id: u64) -> Result<String, Rejected> {
        Ok(format!("{}{id}", self.prefix))
    }
}

impl SendStore for Memory {
    #[race_retry(retries = 1, after = "100ms", total = "1s")]
    async fn count(&self, table: &str) -> Result<usize, Rejected> {
        Ok(self.prefix.len() + table.len())
    }
}

async fn load_via<S: Store>(store: &S, id: u64) -> Result<String, Rejected> {
    store.load(id).await
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let store = Memory { prefix: "row-" };
    assert_eq!(store.load(1).await.unwrap(), "row-1");
    assert_eq!(load_via(&store, 2).await.unwrap(), "row-2");
    assert_eq!(store.count("users").await.unwrap(), 9);
}
