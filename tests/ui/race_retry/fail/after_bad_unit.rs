// an `after` with a unit that does not exist is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "150msec", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
