use resiliency::{breaker, Rejected};

#[breaker(max_error_timeout = "5m")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
