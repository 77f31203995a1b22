use resiliency::{breaker, Rejected};

#[breaker(capacity = 0.75, timeout = "2s", error_timeout = "30s")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
