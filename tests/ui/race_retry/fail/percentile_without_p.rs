// a bare number (`"95"`) is neither a duration nor a percentile.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "95", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
