/// Reads a row with a blocking client.
fn fetch(&self, id: u64) -> Result<Row, DbError> {
    {
        static BREAKER: ::resiliency::__private::BreakerSite = ::resiliency::__private::BreakerSite::new(
            || "db",
            |breaker| breaker.error_threshold(3),
        );
        BREAKER.breaker()
    }
        .call_blocking_with(
            move || -> Result<Row, DbError> {
                if id == 0 {
                    return Err(DbError::NotFound);
                }
                let row = self.client.query_one(id)?;
                Ok(row)
            },
            is_transient,
            ::resiliency::__private::hint_reader!(
                < Result < Row, DbError > as ::resiliency::__private::IsResult > ::Err
            ),
        )
}
