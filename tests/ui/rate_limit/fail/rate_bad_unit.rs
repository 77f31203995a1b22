// A period in a unit that is not one.
use resiliency::{rate_limit, Rejected};

#[rate_limit("5/parsec")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
