// A setting is evaluated once, at the first call, so it cannot use the fn's arguments.
use resiliency::{breaker, Rejected};

#[breaker(timeout = std::time::Duration::from_millis(limit_ms))]
async fn charge(limit_ms: u64) -> Result<u64, Rejected> {
    Ok(limit_ms)
}

fn main() {
    let _ = charge(5);
}
