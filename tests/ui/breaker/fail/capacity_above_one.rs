use resiliency::{breaker, Rejected};

#[breaker(capacity = 1.5, timeout = "2s")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
