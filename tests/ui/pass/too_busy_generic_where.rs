use std::fmt::Display;

use resilient::{too_busy, Rejected};

#[too_busy(max_lag = "70ms", max_latency = "1s")]
async fn describe<T, U>(label: T, items: Vec<U>) -> Result<String, Rejected>
where
    T: Display + Send,
    U: Display + Send,
{
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    Ok(format!("{label}: {}", items.join(", ")))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(describe("ids", vec![1, 2]).await.unwrap(), "ids: 1, 2");
    assert_eq!(describe('c', vec!["x"]).await.unwrap(), "c: x");
}
