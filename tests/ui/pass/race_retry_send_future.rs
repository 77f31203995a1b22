use std::sync::Arc;
use std::time::Duration;

use resilient::{race_retry, Rejected};

fn send<T: Send>(_: T) {}

struct Db {
    rows: Vec<u32>,
}

impl Db {
    #[race_retry(retries = 2, after = "50ms", total = "1s", each = "500ms")]
    async fn count(&self, table: &str, filter: String) -> Result<usize, Rejected> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(self.rows.len() + table.len() + filter.len())
    }
}

#[race_retry(retries = 1, after = "p95", total = "1s", budget = 0.5)]
async fn charge(cents: u64, note: Arc<str>) -> Result<u64, Rejected> {
    tokio::task::yield_now().await;
    Ok(cents + note.len() as u64)
}

#[tokio::main]
async fn main() {
    send(charge(5, "ab".into()));
    assert_eq!(tokio::spawn(charge(5, "ab".into())).await.unwrap().unwrap(), 7);

    let db = Db { rows: vec![1, 2] };
    send(db.count("users", "x".into()));
    let db = Arc::new(db);
    let spawned = tokio::spawn(async move { db.count("users", "x".into()).await });
    assert_eq!(spawned.await.unwrap().unwrap(), 8);
}
