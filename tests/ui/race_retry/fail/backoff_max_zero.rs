// a `backoff_max` of zero is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff_max = "0ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
