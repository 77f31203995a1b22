// A trait's declaration has no body to bound: the attribute goes on the method in the `impl`.
use resiliency::{timeout, Rejected};

trait Prices {
    #[timeout("2s")]
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
