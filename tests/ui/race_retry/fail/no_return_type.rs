// A fn without a return type cannot be refused with `Err`.
use resiliency::race_retry;

#[race_retry(total = "450ms")]
async fn lookup() {}

fn main() {
    let _ = lookup();
}
