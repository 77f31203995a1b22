async fn charge(card: &Card) -> Result<Receipt, PayError> {
    {
        fn breaker_site() {}
        static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
            || ::resiliency::__private::name_of(breaker_site),
            |breaker| breaker.error_threshold(THRESHOLD).timeout(Duration::from_secs(2)),
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
                gateway(card).await
            },
            ::resiliency::__private::every_error,
            ::resiliency::__private::hint_reader!(
                < Result < Receipt, PayError > as ::resiliency::__private::IsResult >
                ::Err
            ),
        )
        .await
}
