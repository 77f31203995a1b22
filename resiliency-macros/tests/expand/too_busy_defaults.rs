/// Serves a search.
#[too_busy]
pub async fn search(query: String) -> Result<Hits, AppError> {
    index().search(&query).await
}
