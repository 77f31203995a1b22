impl Directory {
    async fn lookup(&self, id: UserId, region: &str) -> Result<User, DbError> {
        {
            fn race_site() {}
            static RACE: ::resilient::__private::RaceRetry = ::resilient::__private::RaceRetry::lazy(
                    || ::resilient::__private::name_of(race_site),
                    2,
                    ::resilient::__private::After::Fixed(
                        ::core::time::Duration::from_millis(150),
                    ),
                    ::core::time::Duration::from_millis(450),
                )
                .with_each(::core::time::Duration::from_millis(300))
                .with_budget(0.1f64);
            &RACE
        }
            .run(move || {
                let id = ::resilient::__private::attempt_arg(&id);
                let region = ::resilient::__private::attempt_arg(&region);
                async move {
                    if false {
                        return ::resilient::__private::body_returns::<
                            Result<User, DbError>,
                        >();
                    }
                    self.replica().get(id, region).await
                }
            })
            .await
    }
}
