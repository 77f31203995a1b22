// an unknown argument is refused, with the known one it is a typo of.
use resiliency::{race_retry, Rejected};

#[race_retry(retires = 2, total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
