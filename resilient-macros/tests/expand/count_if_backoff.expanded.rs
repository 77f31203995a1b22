pub(crate) async fn query(sql: String) -> Result<Rows, DbError> {
    {
        static BREAKER: ::my_app::resilient::__private::BreakerSite = ::my_app::resilient::__private::BreakerSite::new(
            ::core::concat!(::core::module_path!(), "::", "query"),
            |breaker| {
                breaker
                    .backoff(2.0)
                    .max_error_timeout(::core::time::Duration::from_secs(300))
            },
        );
        BREAKER.breaker()
    }
        .call_if(DbError::is_transient, async move { db().query(&sql).await })
        .await
}
