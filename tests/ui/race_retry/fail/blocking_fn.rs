// `#[race_retry]` races attempts inside one task: a blocking fn is refused at its `fn` token.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms")]
fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = lookup();
}
