async fn fetch<K: Clone + Display>(
    key: K,
    (page, size): (u32, u32),
) -> Result<Page, DbError> {
    let attempt = move || {
        let key = ::resilient::__private::attempt_arg(&key);
        let page = ::resilient::__private::attempt_arg(&page);
        let size = ::resilient::__private::attempt_arg(&size);
        async move {
            if false {
                return ::resilient::__private::body_returns::<Result<Page, DbError>>();
            }
            db().page(key.to_string(), page, size).await
        }
    };
    {
        fn race_site() {}
        static RACE: ::resilient::__private::RaceSite = ::resilient::__private::RaceSite::new(
            || ::resilient::__private::name_of(race_site),
            |race| {
                race
                    .after(::resilient::__private::After::Percentile(0.95f64))
                    .total(::core::time::Duration::from_secs(1))
            },
        );
        RACE.race()
    }
        .run_if(|error| (DbError::is_transient)(error), attempt)
        .await
}
