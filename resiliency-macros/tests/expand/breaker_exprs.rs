#[breaker(error_threshold = THRESHOLD, timeout = Duration::from_secs(2))]
async fn charge(card: &Card) -> Result<Receipt, PayError> {
    gateway(card).await
}
