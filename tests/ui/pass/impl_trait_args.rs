use resilient::{breaker, Rejected};

#[breaker(error_threshold = 2)]
async fn total(
    prices: impl IntoIterator<Item = u64>,
    label: impl AsRef<str>,
) -> Result<String, Rejected> {
    let sum: u64 = prices.into_iter().sum();
    Ok(format!("{}={sum}", label.as_ref()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(total([1, 2, 3], "sum").await.unwrap(), "sum=6");
    assert_eq!(total(vec![10], String::from("one")).await.unwrap(), "one=10");
}
