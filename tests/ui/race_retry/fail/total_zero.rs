// a zero `total` is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "0ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
