// A fn that does not return a `Result` cannot be refused with `Err`.
use resiliency::race_retry;

#[race_retry(total = "450ms")]
async fn lookup() -> u32 {
    1
}

fn main() {
    let _ = lookup();
}
