async fn lookup(id: u64) -> Result<User, DbError> {
    {
        fn race_site() {}
        static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
            || ::resiliency::__private::name_of(race_site),
            |race| {
                race
                    .retries(2)
                    .after(::core::time::Duration::from_millis(150))
                    .total(TOTAL)
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
                            Result<User, DbError>,
                        >();
                    }
                    db().user(id).await
                }
            },
            ::resiliency::__private::hint_reader!(
                < Result < User, DbError > as ::resiliency::__private::IsResult > ::Err
            ),
        )
        .await
}
