/// Serves a search.
pub async fn search(query: String) -> Result<Hits, AppError> {
    {
        fn too_busy_site() {}
        static TOO_BUSY: ::resilient::__private::TooBusySite = ::resilient::__private::TooBusySite::new(
            || ::resilient::__private::name_of(too_busy_site),
            |guard| guard,
        );
        TOO_BUSY.guard()
    }
        .call(async move {
            if false {
                return ::resilient::__private::body_returns::<Result<Hits, AppError>>();
            }
            index().search(&query).await
        })
        .await
}
