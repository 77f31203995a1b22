// A duration without a name is the `total` only when it comes first.
use resiliency::{timeout, Rejected};

#[timeout(name = "prices", "2s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
