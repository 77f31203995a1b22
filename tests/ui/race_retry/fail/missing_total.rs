// `total` is required.
use resiliency::{race_retry, Rejected};

#[race_retry(retries = 2, after = "150ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
