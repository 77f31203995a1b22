use resiliency::{breaker, Rejected};

#[breaker(timeout = "10 parsecs")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
