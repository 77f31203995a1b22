use resiliency::{breaker, Rejected};

fn is_transient(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

#[breaker(count_if = is_transient)]
async fn charge() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
