// `retry_if` is called with `&E`, the fn's error type: a predicate on another type is refused.
use resiliency::{race_retry, Rejected};

#[derive(Debug)]
enum LookupError {
    Unavailable,
    Refused(Rejected),
}

impl From<Rejected> for LookupError {
    fn from(r: Rejected) -> Self {
        LookupError::Refused(r)
    }
}

fn is_transient(message: &str) -> bool {
    message.contains("unavailable")
}

#[race_retry(total = "450ms", retry_if = is_transient)]
async fn lookup() -> Result<u32, LookupError> {
    Err(LookupError::Unavailable)
}

fn main() {
    let _ = lookup();
}
