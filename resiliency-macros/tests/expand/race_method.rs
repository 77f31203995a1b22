impl Directory {
    #[race_retry(retries = 2, after = "150ms", total = "450ms", each = "300ms", budget = 0.1)]
    async fn lookup(&self, id: UserId, region: &str) -> Result<User, DbError> {
        self.replica().get(id, region).await
    }
}
