// a percentile without a number (`"p"`) is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "p", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
