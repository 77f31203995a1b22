// A blocking fn cannot be cut off while it runs: refused at its `fn` token.
use resiliency::{timeout, Rejected};

#[timeout("2s")]
fn fetch_price(sku: u64) -> Result<u64, Rejected> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
