use resiliency::{breaker, Rejected};

struct Host(&'static str);

#[breaker(key = host)]
async fn get(host: Host) -> Result<&'static str, Rejected> {
    Ok(host.0)
}

fn main() {
    let _ = get(Host("a"));
}
