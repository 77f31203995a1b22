// The runtime's lag, the default signal, cannot be measured for a blocking fn.
use resiliency::{too_busy, Rejected};

#[too_busy]
fn render() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = render();
}
