/// Reads a row with a blocking client.
#[breaker(name = "db", error_threshold = 3, count_if = is_transient)]
fn fetch(&self, id: u64) -> Result<Row, DbError> {
    if id == 0 {
        return Err(DbError::NotFound);
    }
    let row = self.client.query_one(id)?;
    Ok(row)
}
