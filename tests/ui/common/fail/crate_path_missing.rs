use resiliency::{breaker, Rejected};

#[breaker(crate = "::no_such_crate")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
