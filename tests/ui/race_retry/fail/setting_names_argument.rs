// A setting is evaluated once, at the first call, so it cannot use the fn's arguments.
use std::time::Duration;

use resiliency::{race_retry, Rejected};

#[race_retry(total = deadline)]
async fn lookup(id: u64, deadline: Duration) -> Result<u64, Rejected> {
    let _ = deadline;
    Ok(id)
}

fn main() {
    let _ = lookup(1, Duration::from_secs(1));
}
