/// Serves a search.
pub async fn search(query: String) -> Result<Hits, AppError> {
    {
        fn too_busy_site() {}
        static TOO_BUSY: ::resilient::__private::TooBusy = ::resilient::__private::TooBusy::lazy(||
        ::resilient::__private::name_of(too_busy_site));
        ::resilient::__private::BusySite(&TOO_BUSY)
    }
        .call(async move {
            if false {
                return ::resilient::__private::body_returns::<Result<Hits, AppError>>();
            }
            index().search(&query).await
        })
        .await
}
