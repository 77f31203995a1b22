// A blocking fn's error type must be `From<resiliency::Rejected>` too.
use resiliency::rate_limit;

#[derive(Debug)]
enum PriceError {
    NotFound,
}

#[rate_limit("100/s")]
fn fetch_price(sku: u64) -> Result<u64, PriceError> {
    if sku == 0 {
        return Err(PriceError::NotFound);
    }
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
