// a `backoff` of zero is refused, with the spelling for "at once".
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff = "0ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
