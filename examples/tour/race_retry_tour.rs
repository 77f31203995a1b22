//! 3. `#[race_retry]`: a slow attempt raced, every attempt observed.
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use resiliency::race_retry;

use super::{show, AppError};

// ------------------------------------------------------------------------------------------------
// 3. #[race_retry]
// ------------------------------------------------------------------------------------------------

/// How many of the next replica requests hang for 3s (the others answer in 20ms).
static SLOW_NEXT: AtomicU32 = AtomicU32::new(0);

async fn replica(id: u64) -> Result<String, AppError> {
    let delay = if SLOW_NEXT
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        Duration::from_secs(3)
    } else {
        Duration::from_millis(20)
    };
    tokio::time::sleep(delay).await;
    Ok(format!("user {id}"))
}

/// Attempt 2 starts 150ms after attempt 1 (sooner if one fails), attempt 3 150ms later; the first
/// `Ok` wins and the others are cancelled; at 450ms the whole call ends.
#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn lookup_user(id: u64) -> Result<String, AppError> {
    replica(id).await
}

async fn observe_lookup(id: u64) {
    let started = Instant::now();
    let (result, mut attempts) = race_retry::observe(lookup_user(id)).await;
    show(&format!("lookup_user({id})"), &result, started.elapsed());
    attempts.sort_by_key(|a| a.number);
    for a in attempts {
        println!(
            "    attempt {} started at {:>5.0?}, ran {:>5.0?}: {}",
            a.number, a.started, a.elapsed, a.outcome
        );
    }
}

pub(super) async fn run() {
    println!("\n3. #[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]");
    println!("  a healthy replica: one attempt");
    observe_lookup(1).await;
    println!("  the first request hangs: the retry at 150ms races it and wins");
    SLOW_NEXT.store(1, Ordering::SeqCst);
    observe_lookup(2).await;
    println!("  every request hangs: the deadline ends the call, all attempts cancelled");
    SLOW_NEXT.store(3, Ordering::SeqCst);
    observe_lookup(3).await;

    // The retry budget (on by default: a share of the calls, plus a floor a second) bounds extra
    // attempts.
    let name = race_retry::names()
        .into_iter()
        .find(|n| n.ends_with("lookup_user"))
        .expect("registered by its first call");
    let stats = race_retry::stats(name).expect("stats of a registered fn");
    println!(
        "  race_retry::stats: {} extra attempts, {} calls won by one, {} refused by the budget, {} deadline(s)",
        stats.extra_attempts, stats.won_by_extra, stats.budget_refused, stats.deadlines
    );
}
