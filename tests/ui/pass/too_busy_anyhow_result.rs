use resilient::{too_busy, Rejected};

#[too_busy]
async fn parse(text: &str) -> anyhow::Result<u32> {
    if text.is_empty() {
        anyhow::bail!("empty");
    }
    Ok(text.parse()?)
}

#[too_busy(max_in_flight = 1)]
async fn exclusive() -> anyhow::Result<()> {
    tokio::task::yield_now().await;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(parse("7").await.unwrap(), 7);
    assert_eq!(parse("").await.unwrap_err().to_string(), "empty");
    assert!(parse("x").await.is_err());
    let (a, b) = tokio::join!(exclusive(), exclusive());
    assert!(a.is_ok());
    let refused = b.unwrap_err();
    assert!(refused.downcast_ref::<Rejected>().unwrap().is_too_busy());
}
