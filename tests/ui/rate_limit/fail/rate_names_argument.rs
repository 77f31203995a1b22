// `rate` is evaluated once, at the first call, so it cannot use the fn's arguments.
use resiliency::{rate_limit, Rejected};

#[rate_limit(rate = resiliency::rate_limit::Rate::per_second(per_second))]
async fn fetch_price(sku: u64, per_second: u32) -> Result<u64, Rejected> {
    println!("pricing {sku} at {per_second}/s");
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7, 100);
}
