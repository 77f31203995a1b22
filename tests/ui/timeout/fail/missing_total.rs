// `total` is required: a bare `#[timeout]` says no time limit.
use resiliency::{timeout, Rejected};

#[timeout]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
