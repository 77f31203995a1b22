#[breaker(count_if = DbError::is_transient, backoff = 2.0, max_error_timeout = "5m", crate = "::my_app::resiliency")]
pub(crate) async fn query(sql: String) -> Result<Rows, DbError> {
    db().query(&sql).await
}
