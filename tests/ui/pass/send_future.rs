use std::sync::Arc;

use resilient::{breaker, Rejected};

fn assert_send<T: Send>(_: &T) {}

struct Db {
    rows: Vec<u32>,
}

impl Db {
    #[breaker(key = table, timeout = "1s", error_threshold = 2)]
    async fn count(self: Arc<Self>, table: &str) -> Result<usize, Rejected> {
        tokio::task::yield_now().await;
        Ok(self.rows.len() + table.len())
    }
}

#[breaker(capacity = 0.75, timeout = "2s")]
async fn charge(cents: u64) -> Result<u64, Rejected> {
    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    Ok(cents)
}

#[tokio::main]
async fn main() {
    let future = charge(5);
    assert_send(&future);
    assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), 5);

    let db = Arc::new(Db { rows: vec![1, 2] });
    let future = db.count("users");
    assert_send(&future);
    assert_eq!(future.await.unwrap(), 7);
}
