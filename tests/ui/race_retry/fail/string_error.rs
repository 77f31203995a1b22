// `String` is not the user's type: it cannot be given `From<resiliency::Rejected>`.
use resiliency::race_retry;

#[race_retry(total = "450ms")]
async fn lookup() -> Result<(), String> {
    Ok(())
}

fn main() {
    let _ = lookup();
}
