// a `budget` string other than "off" is refused, with the spelling that turns it off.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", budget = "none")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
