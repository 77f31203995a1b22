/// Charges a card.
pub async fn charge(card: &Card, cents: u64) -> Result<Receipt, PayError> {
    {
        fn breaker_site() {}
        static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
            || ::resiliency::__private::name_of(breaker_site),
            |breaker| {
                breaker
                    .error_threshold(3)
                    .error_window(::core::time::Duration::from_secs(10))
                    .error_timeout(::core::time::Duration::from_secs(30))
            },
        );
        BREAKER.breaker()
    }
        .call_with(
            async move {
                if false {
                    return ::resiliency::__private::body_returns::<
                        Result<Receipt, PayError>,
                    >();
                }
                gateway(card, cents).await
            },
            ::resiliency::__private::every_error,
            ::resiliency::__private::hint_reader!(
                < Result < Receipt, PayError > as ::resiliency::__private::IsResult >
                ::Err
            ),
        )
        .await
}
