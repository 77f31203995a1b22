use resiliency::{breaker, Rejected};

#[breaker(idle_timeout = "10m")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
