// a percentile whose number is malformed (`"p9x"`) is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "p9x", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
