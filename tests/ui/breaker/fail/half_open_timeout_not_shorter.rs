use resiliency::{breaker, Rejected};

#[breaker(timeout = "1s", half_open_timeout = "1000ms")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
