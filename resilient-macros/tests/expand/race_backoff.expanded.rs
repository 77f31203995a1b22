async fn fetch(id: u64) -> Result<Row, DbError> {
    {
        fn race_site() {}
        static RACE: ::resilient::__private::RaceRetry = ::resilient::__private::RaceRetry::lazy(
                || ::resilient::__private::name_of(race_site),
                3,
                ::resilient::__private::After::Fixed(
                    ::core::time::Duration::from_millis(100),
                ),
                ::core::time::Duration::from_secs(1),
            )
            .no_budget()
            .backoff(::core::time::Duration::from_millis(20))
            .backoff_factor(3f64)
            .backoff_max(::core::time::Duration::from_millis(150));
        &RACE
    }
        .run(move || {
            let id = ::resilient::__private::attempt_arg(&id);
            async move {
                if false {
                    return ::resilient::__private::body_returns::<
                        Result<Row, DbError>,
                    >();
                }
                db().row(id).await
            }
        })
        .await
}
async fn at_once(id: u64) -> Result<Row, DbError> {
    {
        fn race_site() {}
        static RACE: ::resilient::__private::RaceRetry = ::resilient::__private::RaceRetry::lazy(
                || ::resilient::__private::name_of(race_site),
                2,
                ::resilient::__private::After::Percentile(0.95),
                ::core::time::Duration::from_millis(450),
            )
            .with_budget(0.2f64)
            .no_backoff();
        &RACE
    }
        .run(move || {
            let id = ::resilient::__private::attempt_arg(&id);
            async move {
                if false {
                    return ::resilient::__private::body_returns::<
                        Result<Row, DbError>,
                    >();
                }
                db().row(id).await
            }
        })
        .await
}
