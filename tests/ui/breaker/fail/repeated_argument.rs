use resiliency::{breaker, Rejected};

#[breaker(error_threshold = 3, error_threshold = 5)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
