// a zero `after` is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "0ms", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
