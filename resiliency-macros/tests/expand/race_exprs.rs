#[race_retry(retries = 2, after = "150ms", total = TOTAL)]
async fn lookup(id: u64) -> Result<User, DbError> {
    db().user(id).await
}
