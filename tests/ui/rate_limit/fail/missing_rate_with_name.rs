// `rate` is required beside other arguments: a name alone says no rate.
use resiliency::{rate_limit, Rejected};

#[rate_limit(name = "prices")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
