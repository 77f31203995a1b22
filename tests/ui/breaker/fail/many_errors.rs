use resiliency::{breaker, Rejected};

#[breaker(capacity = 2, error_treshold = 3, timeout = "450", backoff = 0.5, min_calls = 0)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
