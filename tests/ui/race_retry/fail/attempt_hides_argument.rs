use resiliency::{race_retry, Rejected};

#[race_retry(retries = 1, after = "100ms", total = "1s", attempt = id)]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
