use resiliency::{breaker, Rejected};

#[breaker(name = "")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
