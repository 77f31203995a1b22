// An owned argument is cloned for each attempt, so it must be `Clone`.
use resiliency::{race_retry, Rejected};

struct Query {
    id: u64,
}

#[race_retry(total = "450ms")]
async fn lookup(query: Query) -> Result<u64, Rejected> {
    Ok(query.id)
}

fn main() {
    let _ = lookup(Query { id: 1 });
}
