use resiliency::{too_busy, Rejected};

#[too_busy(name = checkout)]
async fn checkout() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = checkout();
}
