#[too_busy(max_in_flight = 64, fallback = busy_page)]
async fn page(path: String) -> Result<Html, AppError> {
    render(&path).await
}
