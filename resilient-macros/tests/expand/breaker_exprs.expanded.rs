async fn charge(card: &Card) -> Result<Receipt, PayError> {
    match (
        {
            fn breaker_site() {}
            static BREAKER: ::resilient::__private::BreakerSite = ::resilient::__private::BreakerSite::new(
                || ::resilient::__private::name_of(breaker_site),
                |breaker| {
                    breaker.error_threshold(THRESHOLD).timeout(Duration::from_secs(2))
                },
            );
            BREAKER.breaker()
        }
            .admit_closed_timed(),
        async move {
            if false {
                return ::resilient::__private::body_returns::<
                    Result<Receipt, PayError>,
                >();
            }
            gateway(card).await
        },
    ) {
        (::core::result::Result::Ok(admitted), body) => admitted.call_timed(body).await,
        (::core::result::Result::Err(site), body) => site.call_timed(body).await,
    }
}
