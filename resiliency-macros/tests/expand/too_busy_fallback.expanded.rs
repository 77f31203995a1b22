async fn page(path: String) -> Result<Html, AppError> {
    let __resiliency_fallback0 = ::resiliency::__private::fallback_arg(&path);
    match match (
        {
            fn too_busy_site() {}
            static TOO_BUSY: ::resiliency::__private::TooBusySite = ::resiliency::__private::TooBusySite::new(
                || ::resiliency::__private::name_of(too_busy_site),
                |guard| guard.max_in_flight(64),
            );
            TOO_BUSY.guard()
        }
            .admit_free(),
        ::resiliency::__private::refusals(async move {
            if false {
                return ::resiliency::__private::body_returns::<Result<Html, AppError>>();
            }
            render(&path).await
        }),
    ) {
        (::core::result::Result::Ok(()), body) => body.await,
        (::core::result::Result::Err(site), body) => site.call(body).await,
    } {
        ::core::result::Result::Ok(value) => ::core::result::Result::Ok(value),
        ::core::result::Result::Err(::resiliency::__private::Failure::Error(error)) => {
            ::core::result::Result::Err(error)
        }
        ::core::result::Result::Err(
            ::resiliency::__private::Failure::Refused(reason),
        ) => {
            let reason = {
                fn fallback_site() {}
                static FALLBACK: ::resiliency::__private::FallbackSite = ::resiliency::__private::FallbackSite::new(
                    "too_busy",
                    || ::resiliency::__private::name_of(fallback_site),
                );
                &FALLBACK
            }
                .taken(::resiliency::__private::Cause::Refused, reason);
            ::resiliency::__private::output::<
                Result<Html, AppError>,
                _,
                _,
            >(busy_page(__resiliency_fallback0, reason))
                .await
        }
    }
}
