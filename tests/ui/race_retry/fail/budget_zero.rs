// a `budget` of 0 is refused: it lies in (0, 1].
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", budget = 0)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
