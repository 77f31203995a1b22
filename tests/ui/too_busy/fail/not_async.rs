use resilient::{too_busy, Rejected};

#[too_busy]
fn handler() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
