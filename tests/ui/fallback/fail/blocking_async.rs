use resiliency::{breaker, Rejected};

async fn cached(id: u32, _why: Rejected) -> Result<u32, Rejected> {
    Ok(id)
}

#[breaker(fallback = cached)]
fn read(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
