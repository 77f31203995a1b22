use resiliency::{breaker, Rejected};

#[breaker(timeout = "1s", slow_call_duration = "2s")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

#[breaker(slow_call_duration = "0ms")]
async fn refund() -> Result<u32, Rejected> {
    Ok(1)
}

#[breaker(slow_call_duration = 2)]
async fn quote() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
    let _ = refund();
    let _ = quote();
}
