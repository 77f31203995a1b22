use resiliency::{breaker, Rejected};

#[breaker(capacity = 0.75)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
