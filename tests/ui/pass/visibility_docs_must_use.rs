mod billing {
    use resilient::{breaker, Rejected};

    /// Charges `cents`.
    ///
    /// The docs, `#[must_use]` and `pub(crate)` are kept by the expansion.
    #[must_use = "a charge that is not awaited does nothing"]
    #[breaker(error_threshold = 2, name = "billing")]
    pub(crate) async fn charge(cents: u64) -> Result<u64, Rejected> {
        Ok(cents)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(billing::charge(250).await.unwrap(), 250);
    assert!(resilient::breaker::get("billing").is_some());
}
