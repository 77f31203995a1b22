// A rate of zero calls would refuse every call.
use resiliency::{rate_limit, Rejected};

#[rate_limit("0/s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
