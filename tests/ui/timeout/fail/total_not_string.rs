// A bare number is not a duration: the time limit is a string with its unit.
use resiliency::{timeout, Rejected};

#[timeout(2)]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
