use resiliency::{too_busy, Rejected};

const AUTO_START: u32 = 10;

#[too_busy(max_in_flight = 64, auto_max = 100, auto_initial = AUTO_START)]
async fn handler() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
