// A closure that takes another error type than the fn's: one error, not a second at the attribute.
use resiliency::{breaker, Rejected};

#[breaker(count_if = |e: &std::io::Error| e.kind() == std::io::ErrorKind::TimedOut)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
