use resiliency::{breaker, Rejected};

fn cached(_why: Rejected) -> Result<u32, Rejected> {
    Ok(0)
}

#[breaker(fallback = cached)]
async fn fetch(id: u32, region: &str) -> Result<u32, Rejected> {
    Ok(id + region.len() as u32)
}

fn main() {}
