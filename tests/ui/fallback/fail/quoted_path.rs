use resiliency::{breaker, Rejected};

#[breaker(fallback = "cached")]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
