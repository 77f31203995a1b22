// `total` is required: empty parentheses say no time limit either.
use resiliency::{timeout, Rejected};

#[timeout()]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
