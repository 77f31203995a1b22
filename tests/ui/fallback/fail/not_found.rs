use resiliency::{breaker, Rejected};

#[breaker(fallback = cahced)]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn cached(id: u32, _why: Rejected) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
