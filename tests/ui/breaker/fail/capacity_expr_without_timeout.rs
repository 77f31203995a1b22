// `capacity` written as a const still needs `timeout`: the rule about presence does not read the
// value.
use resiliency::{breaker, Rejected};

const CAP: f64 = 0.75;

#[breaker(capacity = CAP)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
