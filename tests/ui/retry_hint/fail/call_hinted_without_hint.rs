use resiliency::{Breaker, Rejected};

#[derive(Debug)]
struct DbError;

impl From<Rejected> for DbError {
    fn from(_: Rejected) -> Self {
        DbError
    }
}

async fn query(breaker: &Breaker) -> Result<u32, DbError> {
    breaker.call_hinted(async { Ok(1) }).await
}

fn main() {
    let _ = query;
}
