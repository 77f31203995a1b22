// `retries` above 16 is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(retries = 17, total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
