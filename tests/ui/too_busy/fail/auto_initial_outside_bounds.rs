use resiliency::{too_busy, Rejected};

#[too_busy(max_in_flight = "auto", auto_min = 8, auto_initial = 2000, auto_max = 100)]
async fn handler() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
