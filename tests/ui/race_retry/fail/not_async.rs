// `#[race_retry]` needs an `async fn`.
use resilient::{race_retry, Rejected};

#[race_retry(total = "450ms")]
fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
