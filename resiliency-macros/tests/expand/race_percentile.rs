#[race_retry(after = "p95", total = "1s", retry_if = DbError::is_transient)]
async fn fetch<K: Clone + Display>(key: K, (page, size): (u32, u32)) -> Result<Page, DbError> {
    db().page(key.to_string(), page, size).await
}
