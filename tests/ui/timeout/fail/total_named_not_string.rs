// A bare number given as `total = ...` is not a duration either.
use resiliency::{timeout, Rejected};

#[timeout(total = 2)]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
