// the percentile `"p100"` is refused: a percentile lies strictly between 0 and 100.
use resiliency::{race_retry, Rejected};

#[race_retry(after = "p100", total = "450ms")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
