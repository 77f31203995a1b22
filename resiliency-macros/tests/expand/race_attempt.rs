#[race_retry(retries = 1, after = "100ms", total = "1s", attempt = n, fallback = last_known, fallback_on = "errors")]
async fn lookup(key: String) -> Result<Value, StoreError> {
    REPLICAS[n as usize % REPLICAS.len()].get(&key).await
}
