// a `total` that is not a string literal is refused.
use resiliency::{race_retry, Rejected};

#[race_retry(total = 450)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
