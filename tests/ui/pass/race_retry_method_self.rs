use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilient::{race_retry, Rejected};

struct Directory {
    region: String,
    attempts: AtomicU32,
}

impl Directory {
    // Every attempt borrows the same `&self`.
    #[race_retry(retries = 2, after = "150ms", total = "450ms")]
    async fn lookup(&self, id: u64) -> Result<String, Rejected> {
        // The first attempt hangs; the second answers in 20 ms.
        let slow = self.attempts.fetch_add(1, Ordering::Relaxed) == 0;
        tokio::time::sleep(Duration::from_millis(if slow { 5_000 } else { 20 })).await;
        Ok(format!("user {id} in {}", self.region))
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let directory = Directory { region: "eu".into(), attempts: AtomicU32::new(0) };
    let started = tokio::time::Instant::now();
    assert_eq!(directory.lookup(7).await.unwrap(), "user 7 in eu");
    assert_eq!(started.elapsed(), Duration::from_millis(170));
    assert_eq!(directory.attempts.load(Ordering::Relaxed), 2);
}
