// The time limit is `total`, as in `#[race_retry]`; `timeout = ...` is `#[breaker]`'s.
use resiliency::{timeout, Rejected};

#[timeout(timeout = "2s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
