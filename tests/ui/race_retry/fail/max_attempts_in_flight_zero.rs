// `max_attempts_in_flight = 0` is refused: at least one attempt runs at a time.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms", max_attempts_in_flight = 0)]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
