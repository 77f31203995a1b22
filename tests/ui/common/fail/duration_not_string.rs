use resiliency::{breaker, Rejected};

#[breaker(timeout = 5)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
