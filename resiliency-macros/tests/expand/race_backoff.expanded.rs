async fn fetch(id: u64) -> Result<Row, DbError> {
    {
        fn race_site() {}
        static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
            || ::resiliency::__private::name_of(race_site),
            |race| {
                race
                    .retries(3)
                    .after(::core::time::Duration::from_millis(100))
                    .total(::core::time::Duration::from_secs(1))
                    .budget(::resiliency::__private::Budget::Off)
                    .backoff(::core::time::Duration::from_millis(20))
                    .backoff_factor(3.0)
                    .backoff_max(::core::time::Duration::from_millis(150))
            },
        );
        RACE.race()
    }
        .run_with(
            move || {
                let id = ::resiliency::__private::attempt_arg(&id);
                async move {
                    if false {
                        return ::resiliency::__private::body_returns::<
                            Result<Row, DbError>,
                        >();
                    }
                    db().row(id).await
                }
            },
            ::resiliency::__private::hint_reader!(
                < Result < Row, DbError > as ::resiliency::__private::IsResult > ::Err
            ),
        )
        .await
}
async fn at_once(id: u64) -> Result<Row, DbError> {
    {
        fn race_site() {}
        static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
            || ::resiliency::__private::name_of(race_site),
            |race| {
                race
                    .total(::core::time::Duration::from_millis(450))
                    .budget(0.2)
                    .backoff(::resiliency::__private::Backoff::Off)
            },
        );
        RACE.race()
    }
        .run_with(
            move || {
                let id = ::resiliency::__private::attempt_arg(&id);
                async move {
                    if false {
                        return ::resiliency::__private::body_returns::<
                            Result<Row, DbError>,
                        >();
                    }
                    db().row(id).await
                }
            },
            ::resiliency::__private::hint_reader!(
                < Result < Row, DbError > as ::resiliency::__private::IsResult > ::Err
            ),
        )
        .await
}
