// A zero `total` would cut every call off at once.
use resiliency::{timeout, Rejected};

#[timeout(total = "0s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
