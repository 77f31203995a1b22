// An owned argument of a generic type needs a `Clone` bound, as it is cloned for each attempt.
use resiliency::{race_retry, Rejected};

#[race_retry(total = "450ms")]
async fn lookup<T: ToString>(key: T) -> Result<String, Rejected> {
    Ok(key.to_string())
}

fn main() {
    let _ = lookup(1);
}
