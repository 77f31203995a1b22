// A blocking fn's error type needs `From<Rejected>` too, reported at the error type.
use resiliency::breaker;

#[breaker(error_threshold = 3)]
fn charge() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = charge();
}
