// The number of calls must be a whole number.
use resiliency::{rate_limit, Rejected};

#[rate_limit("x/s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
