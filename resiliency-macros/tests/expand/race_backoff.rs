#[race_retry(retries = 3, after = "100ms", total = "1s", budget = "off", backoff = "20ms", backoff_factor = 3, backoff_max = "150ms")]
async fn fetch(id: u64) -> Result<Row, DbError> {
    db().row(id).await
}

#[race_retry(total = "450ms", budget = 0.2, backoff = "off")]
async fn at_once(id: u64) -> Result<Row, DbError> {
    db().row(id).await
}
