//! 4. `#[timeout]`: a time limit on one call, its deadline passed on, and a breaker around it.
use std::time::{Duration, Instant};

use resiliency::{breaker, timeout};

use super::{set_upstream, show, upstream, AppError, HANGING, HEALTHY};

// ------------------------------------------------------------------------------------------------
// 4. #[timeout]
// ------------------------------------------------------------------------------------------------

/// At most 100 ms a call; the body says how long it had, as an upstream request's header would.
#[timeout("100ms")]
async fn quote(symbol: &str) -> Result<String, AppError> {
    let left = resiliency::time_left().unwrap_or(Duration::ZERO);
    let answer = upstream(symbol).await?;
    Ok(format!(
        "{answer} (sent x-timeout-ms: {})",
        left.as_millis()
    ))
}

/// The breaker outside, the time limit inside: each call cut off is an error the breaker counts.
#[breaker(name = "quotes", error_threshold = 2, error_timeout = "1s")]
#[timeout("50ms")]
async fn guarded_quote(symbol: &str) -> Result<String, AppError> {
    upstream(symbol).await
}

pub(super) async fn run() {
    println!("\n4. #[timeout(\"100ms\")], and #[breaker] around #[timeout(\"50ms\")]");
    let started = Instant::now();
    show("quote(\"ACME\")", &quote("ACME").await, started.elapsed());
    set_upstream(HANGING, "hanging");
    let started = Instant::now();
    show("quote(\"ACME\")", &quote("ACME").await, started.elapsed());
    for _ in 0..3 {
        let started = Instant::now();
        show(
            "guarded_quote(\"ACME\")",
            &guarded_quote("ACME").await,
            started.elapsed(),
        );
    }
    println!("  (two calls cut off at 50 ms opened the breaker; the third was refused at once)");
    set_upstream(HEALTHY, "healthy");
}
