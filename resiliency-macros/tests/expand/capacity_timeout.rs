#[breaker(name = "payments", capacity = 0.75, timeout = "60s", half_open_timeout = "1.5s")]
async fn charge(card: &Card) -> Result<Receipt, PayError> {
    let receipt = gateway(card).await?;
    Ok(receipt)
}
