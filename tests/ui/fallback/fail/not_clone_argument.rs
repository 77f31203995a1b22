use resiliency::{breaker, Rejected};

struct Request {
    id: u32,
}

fn cached(request: Request, _why: Rejected) -> Result<u32, Rejected> {
    Ok(request.id)
}

#[breaker(fallback = cached)]
async fn fetch(request: Request) -> Result<u32, Rejected> {
    Ok(request.id)
}

fn main() {}
