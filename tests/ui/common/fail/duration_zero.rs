use resiliency::{breaker, Rejected};

#[breaker(error_timeout = "0ms")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
