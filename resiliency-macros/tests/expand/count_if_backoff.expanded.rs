pub(crate) async fn query(sql: String) -> Result<Rows, DbError> {
    {
        fn breaker_site() {}
        static BREAKER: ::my_app::resiliency::__private::BreakerSite = ::my_app::resiliency::__private::BreakerSite::new(
            || ::my_app::resiliency::__private::name_of(breaker_site),
            |breaker| {
                breaker
                    .backoff(2.0)
                    .max_error_timeout(::core::time::Duration::from_secs(300))
            },
        );
        BREAKER.breaker()
    }
        .call_with(
            ::my_app::resiliency::__private::returns::<
                Result<Rows, DbError>,
                _,
            >(async move {
                if false {
                    return ::my_app::resiliency::__private::body_returns::<
                        Result<Rows, DbError>,
                    >();
                }
                db().query(&sql).await
            }),
            DbError::is_transient,
            ::my_app::resiliency::__private::hint_reader!(
                < Result < Rows, DbError > as ::my_app::resiliency::__private::IsResult >
                ::Err
            ),
        )
        .await
}
