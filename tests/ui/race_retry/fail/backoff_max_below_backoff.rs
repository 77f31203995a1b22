// a `backoff_max` below `backoff` is refused: it would bound every wait.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff = "50ms", backoff_max = "20ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
