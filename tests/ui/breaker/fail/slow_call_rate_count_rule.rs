use resiliency::{breaker, Rejected};

#[breaker(error_threshold = 3, slow_call_duration = "1s", slow_call_rate = 0.5)]
async fn fetch() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
