// A literal beside an expression is still checked at compile time: here `timeout`, while the
// const `CAP` is checked at first use.
use resiliency::{breaker, Rejected};

const CAP: f64 = 0.75;

#[breaker(capacity = CAP, timeout = "0s")]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
