// A `retry_if` closure whose parameter is typed as something else than `&E` is refused.
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

#[race_retry(total = "450ms", retry_if = |message: &str| message.contains("unavailable"))]
async fn lookup() -> Result<u32, LookupError> {
    Err(LookupError::Unavailable)
}

fn main() {
    let _ = lookup();
}
