// A duration in a unit that is not one.
use resiliency::{timeout, Rejected};

#[timeout("2 parsecs")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
