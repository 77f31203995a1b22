// The error type must be `From<resiliency::Rejected>`, so that a call cut off can be returned as `Err`.
use resiliency::timeout;

#[derive(Debug)]
enum PriceError {
    NotFound,
}

#[timeout("2s")]
async fn fetch_price(sku: u64) -> Result<u64, PriceError> {
    if sku == 0 {
        return Err(PriceError::NotFound);
    }
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7);
}
