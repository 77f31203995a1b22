async fn lookup(id: u64) -> Result<User, DbError> {
    {
        fn race_site() {}
        static RACE: ::resilient::__private::RaceSite = ::resilient::__private::RaceSite::new(
            || ::resilient::__private::name_of(race_site),
            |race| {
                race
                    .retries(2)
                    .after(
                        ::resilient::__private::After::Fixed(
                            ::core::time::Duration::from_millis(150),
                        ),
                    )
                    .total(TOTAL)
            },
        );
        RACE.race()
    }
        .run(move || {
            let id = ::resilient::__private::attempt_arg(&id);
            async move {
                if false {
                    return ::resilient::__private::body_returns::<
                        Result<User, DbError>,
                    >();
                }
                db().user(id).await
            }
        })
        .await
}
