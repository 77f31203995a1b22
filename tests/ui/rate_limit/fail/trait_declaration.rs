// A trait's declaration has no body to limit: the attribute goes on the method in the `impl`.
use resiliency::{rate_limit, Rejected};

trait Prices {
    #[rate_limit("100/s")]
    async fn fetch_price(&self, sku: u64) -> Result<u64, Rejected>;
}

struct Catalog;

impl Prices for Catalog {
    async fn fetch_price(&self, sku: u64) -> Result<u64, Rejected> {
        Ok(sku * 100)
    }
}

fn main() {
    let _ = Catalog.fetch_price(7);
}
