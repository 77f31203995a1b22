use std::error::Error;
use std::sync::atomic::{AtomicU32, Ordering};

use resilient::race_retry;

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

// Each attempt gets its own copy of a `mut` argument and may change it: the first attempt fails
// after changing its copy, and the retry still starts from the caller's value.
#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn build(mut path: String, mut depth: u32) -> Result<String, Box<dyn Error + Send + Sync>> {
    depth += 1;
    path.push_str("/leaf");
    if ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(format!("{path} is busy").into());
    }
    Ok(format!("{path}:{depth}"))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(build("/root".into(), 1).await.unwrap(), "/root/leaf:2");
    assert_eq!(ATTEMPTS.load(Ordering::Relaxed), 2);
}
