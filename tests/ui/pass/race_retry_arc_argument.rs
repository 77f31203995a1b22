use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resilient::{race_retry, Rejected};

// Not `Clone`: shared with every attempt through the `Arc`.
struct Pool {
    calls: AtomicU32,
}

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn query(pool: Arc<Pool>, sql: &str) -> Result<usize, Rejected> {
    let first = pool.calls.fetch_add(1, Ordering::Relaxed) == 0;
    tokio::time::sleep(Duration::from_millis(if first { 900 } else { 10 })).await;
    Ok(sql.len())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let pool = Arc::new(Pool { calls: AtomicU32::new(0) });
    assert_eq!(query(Arc::clone(&pool), "select 1").await.unwrap(), 8);
    assert_eq!(pool.calls.load(Ordering::Relaxed), 2);
    // Every attempt's clone has been dropped with the call.
    assert_eq!(Arc::strong_count(&pool), 1);
}
