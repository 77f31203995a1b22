/// Serves a search.
pub async fn search(query: String) -> Result<Hits, AppError> {
    {
        static TOO_BUSY: ::resilient::__private::TooBusy = ::resilient::__private::TooBusy::new(
            ::core::concat!(::core::module_path!(), "::", "search"),
        );
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
