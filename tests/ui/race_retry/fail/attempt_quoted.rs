use resiliency::{race_retry, Rejected};

#[race_retry(retries = 1, after = "100ms", total = "1s", attempt = "n")]
async fn fetch() -> Result<u32, Rejected> {
    Ok(0)
}

fn main() {}
