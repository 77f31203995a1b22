// a `backoff_factor` below 1 is refused: waits would shrink.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff_factor = 0.5)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
