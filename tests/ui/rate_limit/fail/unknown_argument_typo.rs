// An unknown argument is refused, with the known one it is a typo of.
use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", burts = 5)]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
