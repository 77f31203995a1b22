// a zero `each` is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", each = "0s")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
