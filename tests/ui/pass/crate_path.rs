use resilient::{breaker, Rejected};

#[breaker(crate = "::resilient", error_threshold = 2)]
async fn charge(cents: u64) -> Result<u64, Rejected> {
    Ok(cents)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(charge(3)).unwrap(), 3);
}
