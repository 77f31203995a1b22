// a `backoff` word other than "off" is refused, with what is valid.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", backoff = "none")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
