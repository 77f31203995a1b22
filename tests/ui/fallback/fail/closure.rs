use resiliency::{breaker, Rejected};

#[breaker(fallback = |id, _why| Ok(id))]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
