// A rate limit's name is what settings and metrics know it by: it cannot be empty.
use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", name = "")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
