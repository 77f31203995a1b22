// A fn that does not return a `Result` has no `Err` to return when its time runs out.
use resiliency::timeout;

#[timeout("2s")]
async fn fetch_price(sku: u64) -> Option<u64> {
    Some(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
