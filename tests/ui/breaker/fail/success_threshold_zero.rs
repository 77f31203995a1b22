use resiliency::{breaker, Rejected};

#[breaker(success_threshold = 0)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
