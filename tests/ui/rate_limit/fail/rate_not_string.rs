// A bare number is not a rate: the rate is a string with its period.
use resiliency::{rate_limit, Rejected};

#[rate_limit(rate = 100)]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
