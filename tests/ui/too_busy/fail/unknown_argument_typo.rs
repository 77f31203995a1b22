use resiliency::{too_busy, Rejected};

#[too_busy(max_inflight = 3)]
async fn handler() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
