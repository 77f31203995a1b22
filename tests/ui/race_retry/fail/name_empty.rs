use resiliency::{race_retry, Rejected};

#[race_retry(name = "", total = "450ms")]
async fn search() -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = search();
}
