use resiliency::{breaker, Rejected};

#[breaker(error_treshold = 3)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
