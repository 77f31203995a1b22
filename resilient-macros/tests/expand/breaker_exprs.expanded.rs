async fn charge(card: &Card) -> Result<Receipt, PayError> {
    {
        fn breaker_site() {}
        static BREAKER: ::resilient::__private::BreakerSite = ::resilient::__private::BreakerSite::new(
            || ::resilient::__private::name_of(breaker_site),
            |breaker| breaker.error_threshold(THRESHOLD).timeout(Duration::from_secs(2)),
        );
        BREAKER.breaker()
    }
        .call_timed(async move {
            if false {
                return ::resilient::__private::body_returns::<
                    Result<Receipt, PayError>,
                >();
            }
            gateway(card).await
        })
        .await
}
