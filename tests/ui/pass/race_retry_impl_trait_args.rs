use resilient::{race_retry, Rejected};

// An `impl Trait` argument is cloned for each attempt like any owned one.
#[race_retry(retries = 1, after = "100ms", total = "1s")]
async fn greet(name: impl AsRef<str> + Clone, greeting: &str) -> Result<String, Rejected> {
    Ok(format!("{greeting} {}", name.as_ref()))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(greet("ann", "hi").await.unwrap(), "hi ann");
    assert_eq!(greet(String::from("bob"), "hello").await.unwrap(), "hello bob");
}
