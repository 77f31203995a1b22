/// Serves a search.
pub async fn search(query: String) -> Result<Hits, AppError> {
    match (
        {
            fn too_busy_site() {}
            static TOO_BUSY: ::resiliency::__private::TooBusySite = ::resiliency::__private::TooBusySite::new(
                || ::resiliency::__private::name_of(too_busy_site),
                |guard| guard,
            );
            TOO_BUSY.guard()
        }
            .admit_free(),
        async move {
            if false {
                return ::resiliency::__private::body_returns::<Result<Hits, AppError>>();
            }
            index().search(&query).await
        },
    ) {
        (::core::result::Result::Ok(()), body) => body.await,
        (::core::result::Result::Err(site), body) => site.call(body).await,
    }
}
