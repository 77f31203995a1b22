async fn charge(card: &Card) -> Result<Receipt, PayError> {
    {
        static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
            || "payments",
            |breaker| {
                breaker
                    .capacity(0.75)
                    .timeout(::core::time::Duration::from_secs(60))
                    .half_open_timeout(::core::time::Duration::from_millis(1500))
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
                let receipt = gateway(card).await?;
                Ok(receipt)
            },
            ::resiliency::__private::every_error,
            ::resiliency::__private::hint_reader!(
                < Result < Receipt, PayError > as ::resiliency::__private::IsResult >
                ::Err
            ),
        )
        .await
}
