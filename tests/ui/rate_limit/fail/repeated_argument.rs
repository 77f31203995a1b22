// An argument given twice is refused: which of the two would hold?
use resiliency::{rate_limit, Rejected};

#[rate_limit(rate = "100/s", name = "prices", rate = "5/s")]
async fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
