/// Charges a card.
pub async fn charge(card: &Card, cents: u64) -> Result<Receipt, PayError> {
    {
        static BREAKER: ::resilient::__private::BreakerSite = ::resilient::__private::BreakerSite::new(
            ::core::concat!(::core::module_path!(), "::", "charge"),
            |breaker| {
                breaker
                    .error_threshold(3)
                    .error_window(::core::time::Duration::from_secs(10))
                    .error_timeout(::core::time::Duration::from_secs(30))
            },
        );
        BREAKER.breaker()
    }
        .call(async move { gateway(card, cents).await })
        .await
}
