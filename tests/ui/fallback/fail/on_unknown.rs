use resiliency::{breaker, Rejected};

fn cached(id: u32, _why: Rejected) -> Result<u32, Rejected> {
    Ok(id)
}

#[breaker(fallback = cached, fallback_on = "always")]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
