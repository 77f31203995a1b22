use resilient::{too_busy, Rejected};

#[too_busy]
async fn ping(n: u32) -> Result<u32, Rejected> {
    Ok(n + 1)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(ping(1).await.unwrap(), 2);
    assert_eq!(ping(41).await.unwrap(), 42);
}
