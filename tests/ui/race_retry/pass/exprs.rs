// Numbers and durations written as consts, paths and expressions, each passed to the builder
// method of its name (`after` as a fixed delay); `total`, which is required, is given by a const.
use std::time::Duration;

use resiliency::{race_retry, Rejected};

const TOTAL: Duration = Duration::from_millis(450);
const RETRIES: u32 = 2;

mod config {
    pub const AFTER: std::time::Duration = std::time::Duration::from_millis(150);
    pub static BUDGET: f64 = 0.2;
}

fn factor() -> f64 {
    3.0
}

#[race_retry(total = TOTAL)]
async fn deadline(id: u64) -> Result<u64, Rejected> {
    Ok(id)
}

#[race_retry(
    retries = RETRIES + 1,
    after = config::AFTER,
    total = TOTAL * 2,
    each = Duration::from_millis(300),
    budget = config::BUDGET,
    backoff = Duration::from_millis(10),
    backoff_factor = factor(),
    backoff_max = {
        let quarter = TOTAL / 4;
        quarter.min(Duration::from_millis(100))
    },
)]
async fn every_setting(id: u64) -> Result<u64, Rejected> {
    Ok(id + 1)
}

// "off" and percentiles stay literals beside expressions.
#[race_retry(after = "p99", total = TOTAL, budget = "off", backoff = "off")]
async fn literals_beside(id: u64) -> Result<u64, Rejected> {
    Ok(id + 2)
}

struct Directory;

impl Directory {
    const TOTAL: Duration = Duration::from_secs(1);

    // The settings live in a `static` of their own, where `Self` is not in scope: name the type.
    #[race_retry(total = Directory::TOTAL)]
    async fn lookup(&self, id: u64) -> Result<u64, Rejected> {
        Ok(id + 3)
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(deadline(1).await.unwrap(), 1);
        assert_eq!(every_setting(1).await.unwrap(), 2);
        assert_eq!(literals_beside(1).await.unwrap(), 3);
        assert_eq!(Directory.lookup(1).await.unwrap(), 4);
    });
}
