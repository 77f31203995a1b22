// A zero time limit written first, without its name, is refused as `total = "0s"` is.
use resiliency::{timeout, Rejected};

#[timeout("0s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
