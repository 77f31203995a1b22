use resiliency::{breaker, Rejected};

fn cached(_why: Rejected) -> Result<String, Rejected> {
    Ok(String::new())
}

#[breaker(fallback = cached)]
async fn fetch() -> Result<impl std::fmt::Display, Rejected> {
    Ok(1)
}

fn main() {}
