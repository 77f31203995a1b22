const RATE: resiliency::rate_limit::Rate = resiliency::rate_limit::Rate::per_second(20);

#[rate_limit("100/s")]
async fn lookup(id: u64) -> Result<Item, AppError> {
    fetch(id).await
}

impl Partner {
    #[rate_limit(rate = RATE, burst = 5, max_wait = "50ms", name = "partner-api", fallback = Self::later)]
    async fn quote(&self, sku: &str) -> Result<Quote, AppError> {
        self.client.quote(sku).await
    }
}

/// Reads a page of the ledger on the caller's thread.
#[rate_limit("10/100ms", max_wait = "20ms")]
pub fn ledger_page(ledger: &Ledger, page: u32) -> Result<Page, AppError> {
    let page = ledger.read(page)?;
    Ok(page)
}
