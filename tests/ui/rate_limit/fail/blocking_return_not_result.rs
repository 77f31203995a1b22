// A blocking fn is limited too, and needs a `Result` as much as an async one.
use resiliency::rate_limit;

#[rate_limit("100/s")]
fn fetch_price(sku: u64) -> u64 {
    sku * 100
}

fn main() {
    let _ = fetch_price(7);
}
