use resiliency::{breaker, Rejected};

#[breaker(fallback_on = "errors")]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
