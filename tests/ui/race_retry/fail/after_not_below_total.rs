// `after` must be below `total`, or no retry could start before the deadline.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "450ms", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
