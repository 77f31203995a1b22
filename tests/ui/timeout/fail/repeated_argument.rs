// An argument given twice is refused: which of the two would hold?
use resiliency::{timeout, Rejected};

#[timeout(total = "2s", name = "prices", total = "3s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
