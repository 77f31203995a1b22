async fn lookup(key: String) -> Result<Value, StoreError> {
    let __resiliency_fallback0 = ::resiliency::__private::fallback_arg(&key);
    match {
        {
            fn race_site() {}
            static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
                || ::resiliency::__private::name_of(race_site),
                |race| {
                    race
                        .retries(1)
                        .after(::core::time::Duration::from_millis(100))
                        .total(::core::time::Duration::from_secs(1))
                },
            );
            RACE.race()
        }
            .run_with(
                ::resiliency::__private::numbered(move |n: u32| {
                    let key = ::resiliency::__private::attempt_arg(&key);
                    async move {
                        if false {
                            return ::resiliency::__private::body_returns::<
                                Result<Value, StoreError>,
                            >();
                        }
                        REPLICAS[n as usize % REPLICAS.len()].get(&key).await
                    }
                }),
                ::resiliency::__private::hint_reader!(
                    < Result < Value, StoreError > as ::resiliency::__private::IsResult >
                    ::Err
                ),
            )
            .await
    } {
        ::core::result::Result::Ok(value) => ::core::result::Result::Ok(value),
        ::core::result::Result::Err(reason) => {
            let reason = {
                fn fallback_site() {}
                static FALLBACK: ::resiliency::__private::FallbackSite = ::resiliency::__private::FallbackSite::new(
                    "race_retry",
                    || ::resiliency::__private::name_of(fallback_site),
                );
                &FALLBACK
            }
                .taken(::resiliency::__private::Cause::Error, reason);
            ::resiliency::__private::output::<
                Result<Value, StoreError>,
                _,
                _,
            >(last_known(__resiliency_fallback0, reason))
                .await
        }
    }
}
