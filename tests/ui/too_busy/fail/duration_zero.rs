use resiliency::{too_busy, Rejected};

#[too_busy(max_lag = "0ms")]
async fn handler() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
