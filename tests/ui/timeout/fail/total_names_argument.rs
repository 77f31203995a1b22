// `total` is evaluated once, at the first call, so it cannot use the fn's arguments.
use resiliency::{timeout, Rejected};

#[timeout(total = std::time::Duration::from_millis(budget_ms))]
async fn fetch_price(sku: u64, budget_ms: u64) -> Result<u64, Rejected> {
    println!("pricing {sku} within {budget_ms} ms");
    Ok(sku * 100)
}

fn main() {
    let _ = fetch_price(7, 500);
}
