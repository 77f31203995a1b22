// An unknown argument is refused, with the known one it is a typo of.
use resiliency::{timeout, Rejected};

#[timeout(totl = "2s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
