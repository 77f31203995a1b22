use resiliency::{breaker, Rejected};

#[breaker(failure_rate = 0.5, slow_call_rate = 0.8)]
async fn fetch() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
