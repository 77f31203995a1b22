const RATE: resiliency::rate_limit::Rate = resiliency::rate_limit::Rate::per_second(20);
async fn lookup(id: u64) -> Result<Item, AppError> {
    {
        fn rate_limit_site() {}
        static RATE_LIMIT: ::resiliency::__private::RateLimitSite = ::resiliency::__private::RateLimitSite::new(
            || ::resiliency::__private::name_of(rate_limit_site),
            |limit| {
                limit
                    .rate(
                        ::resiliency::__private::Rate::new(
                            100,
                            ::core::time::Duration::from_secs(1),
                        ),
                    )
            },
        );
        RATE_LIMIT.rate_limit()
    }
        .call(async move {
            if false {
                return ::resiliency::__private::body_returns::<Result<Item, AppError>>();
            }
            fetch(id).await
        })
        .await
}
impl Partner {
    async fn quote(&self, sku: &str) -> Result<Quote, AppError> {
        let __resiliency_fallback0 = ::resiliency::__private::fallback_arg(&self);
        let __resiliency_fallback1 = ::resiliency::__private::fallback_arg(&sku);
        match {
            static RATE_LIMIT: ::resiliency::__private::RateLimitSite = ::resiliency::__private::RateLimitSite::new(
                || "partner-api",
                |limit| {
                    limit
                        .rate(RATE)
                        .burst(5)
                        .max_wait(::core::time::Duration::from_millis(50))
                },
            );
            RATE_LIMIT.rate_limit()
        }
            .call(
                ::resiliency::__private::refusals(async move {
                    if false {
                        return ::resiliency::__private::body_returns::<
                            Result<Quote, AppError>,
                        >();
                    }
                    self.client.quote(sku).await
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
                        "rate_limit",
                        || "partner-api",
                    );
                    &FALLBACK
                }
                    .taken(::resiliency::__private::Cause::Refused, reason);
                ::resiliency::__private::output::<
                    Result<Quote, AppError>,
                    _,
                    _,
                >(Self::later(__resiliency_fallback0, __resiliency_fallback1, reason))
                    .await
            }
        }
    }
}
/// Reads a page of the ledger on the caller's thread.
pub fn ledger_page(ledger: &Ledger, page: u32) -> Result<Page, AppError> {
    {
        fn rate_limit_site() {}
        static RATE_LIMIT: ::resiliency::__private::RateLimitSite = ::resiliency::__private::RateLimitSite::new(
            || ::resiliency::__private::name_of(rate_limit_site),
            |limit| {
                limit
                    .rate(
                        ::resiliency::__private::Rate::new(
                            10,
                            ::core::time::Duration::from_millis(100),
                        ),
                    )
                    .max_wait(::core::time::Duration::from_millis(20))
            },
        );
        RATE_LIMIT.rate_limit()
    }
        .call_blocking(move || -> Result<Page, AppError> {
            let page = ledger.read(page)?;
            Ok(page)
        })
}
