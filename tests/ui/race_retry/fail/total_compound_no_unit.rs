use resiliency::{race_retry, Rejected};

#[race_retry(after = "1s 500ms", total = "2s 500")]
async fn lookup() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {}
