// A `&mut` argument cannot be lent to attempts running at once.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms")]
async fn lookup(id: u64, seen: &mut Vec<u64>) -> Result<u64, Rejected> {
    seen.push(id);
    Ok(id)
}

fn main() {
    let mut seen = Vec::new();
    let _ = lookup(1, &mut seen);
}
