// Nothing can interrupt a blocking fn: `timeout` and `half_open_timeout` are refused, each at
// its name.
use resiliency::{breaker, Rejected};

#[breaker(error_threshold = 3, timeout = "2s", half_open_timeout = "1s")]
fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
