async fn fetch<K: Clone + Display>(
    key: K,
    (page, size): (u32, u32),
) -> Result<Page, DbError> {
    let attempt = move || {
        let key = ::resiliency::__private::attempt_arg(&key);
        let page = ::resiliency::__private::attempt_arg(&page);
        let size = ::resiliency::__private::attempt_arg(&size);
        async move {
            if false {
                return ::resiliency::__private::body_returns::<Result<Page, DbError>>();
            }
            db().page(key.to_string(), page, size).await
        }
    };
    {
        fn race_site() {}
        static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
            || ::resiliency::__private::name_of(race_site),
            |race| {
                race
                    .after(::resiliency::__private::After::Percentile(0.95))
                    .total(::core::time::Duration::from_secs(1))
            },
        );
        RACE.race()
    }
        .run_if_with(
            attempt,
            |error| (DbError::is_transient)(error),
            ::resiliency::__private::hint_reader!(
                < Result < Page, DbError > as ::resiliency::__private::IsResult > ::Err
            ),
        )
        .await
}
