//! 1. `#[breaker]`: a dead upstream's calls time out, the breaker opens, probes close it.
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use resiliency::breaker;

use super::{set_upstream, show, upstream, AppError, FAILING, HANGING, HEALTHY, HITS};

// ------------------------------------------------------------------------------------------------
// 1. #[breaker]
// ------------------------------------------------------------------------------------------------

/// A call taking more than 100ms is abandoned and counts as an error; 3 errors open the breaker.
/// `capacity = 0.75` keeps it open for `100ms * 0.75 / 0.25 = 300ms` after the last error, so a
/// caller stuck on a dead upstream still spends 75% of its time doing something else.
#[breaker(name = "inventory", capacity = 0.75, timeout = "100ms")]
async fn fetch_inventory() -> Result<String, AppError> {
    upstream("inventory").await
}

pub(super) async fn run() {
    println!("\n1. #[breaker(name = \"inventory\", capacity = 0.75, timeout = \"100ms\")]");
    // Every state change of every breaker, printed as it happens.
    breaker::subscribe(|change| println!("  >> {}: {} -> {}", change.name, change.from, change.to));

    let started = Instant::now();
    show("call", &fetch_inventory().await, started.elapsed());
    let inventory = breaker::get("inventory").expect("registered by its first call");
    println!(
        "  breaker::get(\"inventory\"): {}, error_timeout {:?}",
        inventory.state(),
        inventory.error_timeout()
    );

    set_upstream(FAILING, "failing");
    for _ in 0..2 {
        let started = Instant::now();
        show("call", &fetch_inventory().await, started.elapsed());
    }
    set_upstream(HANGING, "hanging");
    let started = Instant::now();
    show("call", &fetch_inventory().await, started.elapsed());
    println!("  (the third error, a timeout, opened the breaker)");

    let hits = HITS.load(Ordering::SeqCst);
    for _ in 0..2 {
        let started = Instant::now();
        show("call", &fetch_inventory().await, started.elapsed());
    }
    let after = HITS.load(Ordering::SeqCst);
    println!("  the upstream had {hits} requests before the refusals and {after} after them");

    let wait = inventory.snapshot().half_opens_in.unwrap_or_default();
    println!("  snapshot().half_opens_in = {wait:.0?}; waiting, then one probe goes through");
    tokio::time::sleep(wait + Duration::from_millis(10)).await;
    println!("  state() = {}", inventory.state());
    set_upstream(HEALTHY, "healthy again");
    let started = Instant::now();
    show("probe", &fetch_inventory().await, started.elapsed());
    println!(
        "  state() = {} (one successful probe closes it)",
        inventory.state()
    );
}
