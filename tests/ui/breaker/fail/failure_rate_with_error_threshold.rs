use resiliency::{breaker, Rejected};

#[breaker(failure_rate = 0.5, error_threshold = 3)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
