// A duration without a unit: seconds or milliseconds?
use resiliency::{timeout, Rejected};

#[timeout("2")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
