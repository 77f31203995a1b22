// a `budget` above 1 is refused: it lies in (0, 1].
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", budget = 1.5)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
