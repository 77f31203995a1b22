use resiliency::{too_busy, Rejected};

#[too_busy(max_in_flight = "auto", auto_max = 0)]
async fn handler() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
