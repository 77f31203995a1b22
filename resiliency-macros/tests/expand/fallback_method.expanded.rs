impl Profiles {
    async fn profile(
        &self,
        id: UserId,
        __resiliency_arg2: Json<Query>,
    ) -> Result<Profile, ApiError> {
        let __resiliency_fallback0 = ::resiliency::__private::fallback_arg(&self);
        let __resiliency_fallback1 = ::resiliency::__private::fallback_arg(&id);
        let __resiliency_fallback2 = ::resiliency::__private::fallback_arg(
            &__resiliency_arg2,
        );
        match {
            let body = ::resiliency::__private::returns::<
                Result<Profile, ApiError>,
                _,
            >(async move {
                if false {
                    return ::resiliency::__private::body_returns::<
                        Result<Profile, ApiError>,
                    >();
                }
                let Json(query) = __resiliency_arg2;
                self.api.profile(id, &query).await
            });
            let counts = ::resiliency::__private::counts_for(&body, ApiError::is_outage);
            {
                fn breaker_site() {}
                static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
                    || ::resiliency::__private::name_of(breaker_site),
                    |breaker| breaker,
                );
                BREAKER.breaker()
            }
                .call_with(
                    ::resiliency::__private::refusals(body),
                    ::resiliency::__private::on_error(counts),
                    ::resiliency::__private::hint_reader!(
                        ::resiliency::__private::Failure < < Result < Profile, ApiError >
                        as ::resiliency::__private::IsResult > ::Err >
                    ),
                )
                .await
        } {
            ::core::result::Result::Ok(value) => ::core::result::Result::Ok(value),
            ::core::result::Result::Err(
                ::resiliency::__private::Failure::Error(error),
            ) => ::core::result::Result::Err(error),
            ::core::result::Result::Err(
                ::resiliency::__private::Failure::Refused(reason),
            ) => {
                let reason = {
                    fn fallback_site() {}
                    static FALLBACK: ::resiliency::__private::FallbackSite = ::resiliency::__private::FallbackSite::new(
                        "breaker",
                        || ::resiliency::__private::name_of(fallback_site),
                    );
                    &FALLBACK
                }
                    .taken(::resiliency::__private::Cause::Refused, reason);
                ::resiliency::__private::output::<
                    Result<Profile, ApiError>,
                    _,
                    _,
                >(
                        Self::cached(
                            __resiliency_fallback0,
                            __resiliency_fallback1,
                            __resiliency_fallback2,
                            reason,
                        ),
                    )
                    .await
            }
        }
    }
}
