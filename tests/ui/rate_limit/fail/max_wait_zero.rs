// A zero `max_wait` is no wait: leave it out (or write `"off"` at run time) to refuse at once.
use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", max_wait = "0s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
