/// Charges a card.
#[breaker(error_threshold = 3, error_window = "10s", error_timeout = "30s")]
pub async fn charge(card: &Card, cents: u64) -> Result<Receipt, PayError> {
    gateway(card, cents).await
}
