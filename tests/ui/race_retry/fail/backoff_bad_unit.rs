// a `backoff` with an unknown unit is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff = "10 years")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
