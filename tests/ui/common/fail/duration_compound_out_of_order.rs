// A compound duration goes from the largest unit to the smallest, each once, a fraction only last.
use resiliency::{breaker, Rejected};

#[breaker(timeout = "1m30s", error_timeout = "30s1m", error_window = "1.5m30s")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
