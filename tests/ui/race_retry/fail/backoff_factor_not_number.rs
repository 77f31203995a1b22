// a `backoff_factor` that is not a number is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff_factor = "2")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
