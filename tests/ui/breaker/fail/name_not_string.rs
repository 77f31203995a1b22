use resiliency::{breaker, Rejected};

#[breaker(name = payments)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
