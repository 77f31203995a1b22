use resiliency::Rejected;

mod vendored {
    pub use resiliency as resilience;
}

#[resiliency::race_retry(crate = "::resiliency", total = "450ms")]
async fn lookup(id: u64) -> Result<u64, Rejected> {
    Ok(id)
}

// The crate under another path, as when a framework re-exports it.
#[vendored::resilience::race_retry(crate = "crate::vendored::resilience", total = "450ms")]
async fn renamed(id: u64) -> Result<u64, Rejected> {
    Ok(id + 1)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(lookup(3)).unwrap(), 3);
    assert_eq!(runtime.block_on(renamed(3)).unwrap(), 4);
}
