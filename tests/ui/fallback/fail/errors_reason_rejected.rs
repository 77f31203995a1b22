use resiliency::{breaker, Rejected};

#[derive(Debug)]
enum DbError {
    Refused(Rejected),
}

impl From<Rejected> for DbError {
    fn from(rejected: Rejected) -> Self {
        DbError::Refused(rejected)
    }
}

// With `fallback_on = "errors"` the reason is the fn's error type.
fn cached(id: u32, _why: Rejected) -> Result<u32, DbError> {
    Ok(id)
}

#[breaker(fallback = cached, fallback_on = "errors")]
async fn fetch(id: u32) -> Result<u32, DbError> {
    Ok(id)
}

fn main() {}
