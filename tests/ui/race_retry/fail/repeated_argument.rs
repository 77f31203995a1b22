// an argument given twice is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(retries = 2, total = "450ms", retries = 3)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
