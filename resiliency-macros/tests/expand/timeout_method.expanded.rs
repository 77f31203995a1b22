const LIMIT: std::time::Duration = std::time::Duration::from_millis(300);
async fn lookup(id: u64) -> Result<Item, AppError> {
    {
        fn timeout_site() {}
        static TIMEOUT: ::resiliency::__private::TimeoutSite = ::resiliency::__private::TimeoutSite::new(
            || ::resiliency::__private::name_of(timeout_site),
            |timeout| timeout.total(::core::time::Duration::from_secs(2)),
        );
        TIMEOUT.timeout()
    }
        .call(async move {
            if false {
                return ::resiliency::__private::body_returns::<Result<Item, AppError>>();
            }
            fetch(id).await
        })
        .await
}
impl Catalog {
    async fn item(&self, id: &str) -> Result<Item, AppError> {
        let __resiliency_fallback0 = ::resiliency::__private::fallback_arg(&self);
        let __resiliency_fallback1 = ::resiliency::__private::fallback_arg(&id);
        match {
            static TIMEOUT: ::resiliency::__private::TimeoutSite = ::resiliency::__private::TimeoutSite::new(
                || "catalog",
                |timeout| timeout.total(LIMIT),
            );
            TIMEOUT.timeout()
        }
            .call(
                ::resiliency::__private::refusals(async move {
                    if false {
                        return ::resiliency::__private::body_returns::<
                            Result<Item, AppError>,
                        >();
                    }
                    self.fetch(id).await
                }),
            )
            .await
        {
            ::core::result::Result::Ok(value) => ::core::result::Result::Ok(value),
            ::core::result::Result::Err(
                ::resiliency::__private::Failure::Error(error),
            ) => ::core::result::Result::Err(error),
            ::core::result::Result::Err(
                ::resiliency::__private::Failure::Refused(reason),
            ) => {
                let reason = {
                    static FALLBACK: ::resiliency::__private::FallbackSite = ::resiliency::__private::FallbackSite::new(
                        "timeout",
                        || "catalog",
                    );
                    &FALLBACK
                }
                    .taken(::resiliency::__private::Cause::Refused, reason);
                ::resiliency::__private::output::<
                    Result<Item, AppError>,
                    _,
                    _,
                >(Self::cached(__resiliency_fallback0, __resiliency_fallback1, reason))
                    .await
            }
        }
    }
}
