impl Directory {
    async fn lookup(&self, id: UserId, region: &str) -> Result<User, DbError> {
        {
            fn race_site() {}
            static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
                || ::resiliency::__private::name_of(race_site),
                |race| {
                    race
                        .retries(2)
                        .after(::core::time::Duration::from_millis(150))
                        .total(::core::time::Duration::from_millis(450))
                        .each(::core::time::Duration::from_millis(300))
                        .budget(0.1)
                },
            );
            RACE.race()
        }
            .run_with(
                move || {
                    let id = ::resiliency::__private::attempt_arg(&id);
                    let region = ::resiliency::__private::attempt_arg(&region);
                    async move {
                        if false {
                            return ::resiliency::__private::body_returns::<
                                Result<User, DbError>,
                            >();
                        }
                        self.replica().get(id, region).await
                    }
                },
                ::resiliency::__private::hint_reader!(
                    < Result < User, DbError > as ::resiliency::__private::IsResult >
                    ::Err
                ),
            )
            .await
    }
}
