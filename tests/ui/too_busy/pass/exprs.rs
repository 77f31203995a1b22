// Numbers and durations written as consts, paths and expressions, each passed to the builder
// method of its name.
use std::time::Duration;

use resiliency::{too_busy, Rejected};

const LIMIT: u32 = 64;

mod config {
    pub const LAG: std::time::Duration = std::time::Duration::from_millis(50);
}

fn latency() -> Duration {
    Duration::from_millis(200)
}

#[too_busy(max_in_flight = LIMIT)]
async fn limited() -> Result<u32, Rejected> {
    Ok(1)
}

#[too_busy(max_lag = config::LAG, max_in_flight = 2 * LIMIT, max_latency = latency())]
async fn every_signal() -> Result<u32, Rejected> {
    Ok(2)
}

#[too_busy(max_latency = {
    let floor = Duration::from_millis(100);
    floor + config::LAG
})]
async fn block() -> Result<u32, Rejected> {
    Ok(3)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(limited().await.unwrap(), 1);
        assert_eq!(every_signal().await.unwrap(), 2);
        assert_eq!(block().await.unwrap(), 3);
    });
}
