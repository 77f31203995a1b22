// The rate written first is the `rate`: `rate = ...` beside it gives it twice.
use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", rate = "5/s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
