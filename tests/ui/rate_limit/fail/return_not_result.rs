// A fn that does not return a `Result` has no `Err` to return when a call is refused.
use resiliency::rate_limit;

#[rate_limit("100/s")]
async fn fetch_price(sku: u64) -> Option<u64> {
    Some(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
