// `String` is not the user's type: it cannot be given `From<resiliency::Rejected>`.
use resiliency::timeout;

#[timeout("2s")]
async fn fetch_price(sku: u64) -> Result<u64, String> {
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
