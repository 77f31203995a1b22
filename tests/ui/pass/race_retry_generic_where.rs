use std::fmt::Display;

use resilient::{race_retry, Rejected};

#[race_retry(retries = 1, after = "100ms", total = "1s")]
async fn describe<T, U>(label: T, items: Vec<U>) -> Result<String, Rejected>
where
    T: Display + Clone + Send,
    U: Display + Clone + Send,
{
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    Ok(format!("{label}: {}", items.join(", ")))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(describe("ids", vec![1, 2]).await.unwrap(), "ids: 1, 2");
    assert_eq!(describe('c', vec!["x"]).await.unwrap(), "c: x");
}
