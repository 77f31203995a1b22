// A time limit's name is what settings and metrics know it by: it cannot be empty.
use resiliency::{timeout, Rejected};

#[timeout("2s", name = "")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
