async fn search(query: &str) -> Result<Hits, SearchError> {
    {
        fn breaker_site() {}
        static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
            || ::resiliency::__private::name_of(breaker_site),
            |breaker| {
                breaker
                    .timeout(::core::time::Duration::from_secs(2))
                    .slow_call_duration(::core::time::Duration::from_millis(800))
                    .failure_rate(0.5)
                    .min_calls(20)
                    .slow_call_rate(0.8)
            },
        );
        BREAKER.breaker()
    }
        .call_with(
            async move {
                if false {
                    return ::resiliency::__private::body_returns::<
                        Result<Hits, SearchError>,
                    >();
                }
                index().search(query).await
            },
            ::resiliency::__private::every_error,
            ::resiliency::__private::hint_reader!(
                < Result < Hits, SearchError > as ::resiliency::__private::IsResult >
                ::Err
            ),
        )
        .await
}
