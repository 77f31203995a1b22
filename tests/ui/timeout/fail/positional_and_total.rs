// The duration written first is the `total`: `total = ...` beside it gives it twice.
use resiliency::{timeout, Rejected};

#[timeout("2s", total = "5s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
