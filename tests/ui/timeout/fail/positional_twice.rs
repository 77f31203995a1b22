// Only one duration may come without a name: it is the `total`.
use resiliency::{timeout, Rejected};

#[timeout("2s", "5s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
