// A rate without a name is the `rate` only when it comes first.
use resiliency::{rate_limit, Rejected};

#[rate_limit(name = "prices", "100/s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
