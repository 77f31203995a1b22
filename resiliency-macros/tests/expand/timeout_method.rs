const LIMIT: std::time::Duration = std::time::Duration::from_millis(300);

#[timeout("2s")]
async fn lookup(id: u64) -> Result<Item, AppError> {
    fetch(id).await
}

impl Catalog {
    #[timeout(total = LIMIT, name = "catalog", fallback = Self::cached)]
    async fn item(&self, id: &str) -> Result<Item, AppError> {
        self.fetch(id).await
    }
}
