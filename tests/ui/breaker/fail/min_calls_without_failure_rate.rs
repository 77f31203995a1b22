use resiliency::{breaker, Rejected};

#[breaker(min_calls = 20)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
