// Numbers and durations written as consts, paths and expressions, each passed to the builder
// method of its name; presence rules count them as given (`capacity` needs `timeout`, `min_calls`
// needs `failure_rate`).
use std::time::Duration;

use resiliency::{breaker, Rejected};

const THRESHOLD: u32 = 2;
const BASE_MS: u64 = 500;

mod config {
    pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
    pub static RATE: f64 = 0.5;
}

fn growth() -> f64 {
    2.0
}

#[breaker(error_threshold = THRESHOLD, timeout = Duration::from_secs(2))]
async fn counted() -> Result<u32, Rejected> {
    Ok(1)
}

#[breaker(capacity = 0.75, timeout = config::TIMEOUT)]
async fn capacity() -> Result<u32, Rejected> {
    Ok(2)
}

#[breaker(
    failure_rate = config::RATE,
    min_calls = THRESHOLD * 10,
    error_window = Duration::from_millis(4 * BASE_MS),
    backoff = growth(),
    max_error_timeout = {
        let minute = Duration::from_secs(60);
        minute * 2
    },
    half_open_timeout = Duration::from_millis(BASE_MS),
    timeout = config::TIMEOUT,
)]
async fn rated() -> Result<u32, Rejected> {
    Ok(3)
}

#[breaker(key = shard, idle_timeout = config::TIMEOUT * 300, max_keys = 1 << 10)]
async fn keyed(shard: u8) -> Result<u8, Rejected> {
    Ok(shard)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(counted().await.unwrap(), 1);
        assert_eq!(capacity().await.unwrap(), 2);
        assert_eq!(rated().await.unwrap(), 3);
        assert_eq!(keyed(4).await.unwrap(), 4);
    });
}
