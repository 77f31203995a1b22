// The error type must be `From<resiliency::Rejected>`, so that the deadline can be returned as `Err`.
use resiliency::race_retry;

#[derive(Debug)]
struct LookupError;

#[race_retry(total = "450ms")]
async fn lookup() -> Result<u32, LookupError> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
