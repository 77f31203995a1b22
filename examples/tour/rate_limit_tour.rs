//! 5. `#[rate_limit]`: a burst, then the rate's pace; refused with the time until the next permit,
//!    or waiting for it.
use std::time::Instant;

use resiliency::rate_limit;

use super::{show, AppError};

// ------------------------------------------------------------------------------------------------
// 5. #[rate_limit]
// ------------------------------------------------------------------------------------------------

/// A partner API that takes 10 calls a second, 3 at once: over it, refused at once.
#[rate_limit(rate = "10/s", burst = 3)]
async fn notify(order: u32) -> Result<String, AppError> {
    Ok(format!("order {order} sent"))
}

/// The same pace, but a call waits up to 250 ms for its permit instead of being refused.
#[rate_limit(rate = "10/s", burst = 1, max_wait = "250ms")]
async fn notify_patiently(order: u32) -> Result<String, AppError> {
    Ok(format!("order {order} sent"))
}

pub(super) async fn run() {
    println!("\n5. #[rate_limit(rate = \"10/s\", burst = 3)], then with max_wait = \"250ms\"");
    for order in 1..=5 {
        let started = Instant::now();
        let result = notify(order).await;
        show(&format!("notify({order})"), &result, started.elapsed());
        if let Err(AppError::Rejected(rejected)) = &result {
            println!(
                "    retry after {:.0?}",
                rejected.retry_after().unwrap_or_default()
            );
        }
    }
    println!("  five at once: each waits its turn (a permit every 100 ms), up to 250 ms:");
    let started = Instant::now();
    let calls = (1..=5).map(|order| async move {
        let result = notify_patiently(order).await;
        (order, result, started.elapsed())
    });
    for (order, result, took) in futures::future::join_all(calls).await {
        show(&format!("notify_patiently({order})"), &result, took);
    }
}
