use resiliency::{breaker, Rejected};

#[breaker(max_keys = 1000)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
