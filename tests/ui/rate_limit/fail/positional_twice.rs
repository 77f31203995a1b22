// Only one rate may come without a name: it is the `rate`.
use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", "5/s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
