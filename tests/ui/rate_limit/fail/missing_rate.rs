// `rate` is required: a bare `#[rate_limit]` says no rate.
use resiliency::{rate_limit, Rejected};

#[rate_limit]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
