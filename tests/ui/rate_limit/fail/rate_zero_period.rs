// A period of zero is no period.
use resiliency::{rate_limit, Rejected};

#[rate_limit(rate = "5/0s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
