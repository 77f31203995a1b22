// `retries = 0` is refused: it would be no retry at all.
use resiliency::{race_retry, Rejected};

#[race_retry(retries = 0, total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
