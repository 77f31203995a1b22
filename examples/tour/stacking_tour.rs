//! 6. Stacking: a guard, a race and a breaker on one fn.
use std::time::Instant;

use resiliency::{breaker, race_retry, too_busy};

use super::{set_upstream, show, upstream, AppError, FAILING, HEALTHY};

// ------------------------------------------------------------------------------------------------
// 6. Stacking
// ------------------------------------------------------------------------------------------------

/// The outer attribute wraps the inner one: the breaker guards each raced attempt, and load is
/// shed before anything runs.
#[too_busy(max_in_flight = 8)]
#[race_retry(retries = 1, after = "50ms", total = "200ms")]
#[breaker(name = "profiles", error_threshold = 2, error_timeout = "1s")]
async fn fetch_profile(id: u64) -> Result<String, AppError> {
    upstream(if id.is_multiple_of(2) {
        "profile (even)"
    } else {
        "profile (odd)"
    })
    .await
}

pub(super) async fn run() {
    println!("\n6. #[too_busy] + #[race_retry] + #[breaker] on one fn");
    let started = Instant::now();
    show(
        "fetch_profile(1)",
        &fetch_profile(1).await,
        started.elapsed(),
    );
    set_upstream(FAILING, "failing");
    let started = Instant::now();
    show(
        "fetch_profile(2)",
        &fetch_profile(2).await,
        started.elapsed(),
    );
    println!("  (both attempts failed: two errors opened the breaker)");
    let started = Instant::now();
    let result = fetch_profile(3).await;
    show("fetch_profile(3)", &result, started.elapsed());
    if let Err(AppError::Rejected(rejected)) = &result {
        println!(
            "  circuit open: {}, retry after {:?}",
            rejected.is_circuit_open(),
            rejected.retry_after()
        );
    }
    set_upstream(HEALTHY, "healthy");
}
