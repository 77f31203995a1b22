// `max_lag` does not apply to a blocking fn, even beside `max_in_flight`.
use resiliency::{too_busy, Rejected};

#[too_busy(max_lag = "50ms", max_in_flight = 4)]
fn render() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = render();
}
