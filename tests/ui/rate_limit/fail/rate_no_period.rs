// A rate needs its period: 100 per what?
use resiliency::{rate_limit, Rejected};

#[rate_limit("100")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
