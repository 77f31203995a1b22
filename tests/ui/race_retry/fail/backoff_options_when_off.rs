// `backoff_factor` and `backoff_max` with `backoff = "off"` are refused: they would do nothing.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff = "off", backoff_factor = 2, backoff_max = "1s")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
