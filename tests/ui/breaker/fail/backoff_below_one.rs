use resiliency::{breaker, Rejected};

#[breaker(backoff = 0.5)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
