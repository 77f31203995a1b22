use resiliency::{race_retry, Rejected};

fn cached(_id: u32, _why: Rejected) -> Option<u32> {
    None
}

#[race_retry(retries = 1, after = "100ms", total = "1s", fallback = cached)]
async fn fetch(id: u32) -> Result<u32, Rejected> {
    Ok(id)
}

fn main() {}
