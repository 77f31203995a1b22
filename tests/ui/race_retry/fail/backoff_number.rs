// a `backoff` number (the breaker's spelling of a factor) is refused: it is a duration.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff = 2.0)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
