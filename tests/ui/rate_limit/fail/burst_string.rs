// A burst is a number, not a string.
use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", burst = "5")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
