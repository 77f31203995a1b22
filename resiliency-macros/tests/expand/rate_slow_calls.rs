#[breaker(failure_rate = 0.5, min_calls = 20, slow_call_duration = "800ms", slow_call_rate = 0.8, timeout = "2s")]
async fn search(query: &str) -> Result<Hits, SearchError> {
    index().search(query).await
}
