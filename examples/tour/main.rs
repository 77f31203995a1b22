//! A short tour of `resiliency`: every policy at work, in a few seconds.
//!
//! ```text
//! cargo run --example tour
//! ```
//!
//! The "upstreams" of the first sections are async functions that sleep, fail or hang on demand;
//! the last one calls two HTTP servers the tour starts on 127.0.0.1, so nothing leaves the machine.
//! Read it top to bottom: this file holds the upstream every section calls and the order of the
//! sections; each module is one section, showing one attribute and printing what it does.
//! The focused examples (`breaker`, `race_retry`, `too_busy_axum`, `service`) do the same over
//! real HTTP.

mod breaker_tour;
mod race_retry_tour;
mod rate_limit_tour;
mod replicas_tour;
mod settings_tour;
mod stacking_tour;
mod timeout_tour;
mod too_busy_tour;

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::Duration;

use resiliency::Rejected;

/// One error type for the whole program. Every attribute needs `E: From<Rejected>`: that is how a
/// refused call becomes an `Err` of the function's own type.
#[derive(Debug)]
enum AppError {
    Rejected(Rejected),
    Upstream(&'static str),
}

impl From<Rejected> for AppError {
    fn from(rejected: Rejected) -> Self {
        AppError::Rejected(rejected)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Rejected(rejected) => write!(f, "refused: {rejected}"),
            AppError::Upstream(why) => write!(f, "upstream error: {why}"),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// A pretend upstream: healthy (answers in 5ms), failing (errors at once) or hanging (never answers
// within any timeout used here).
// ------------------------------------------------------------------------------------------------

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const HANGING: u8 = 2;

static UPSTREAM: AtomicU8 = AtomicU8::new(HEALTHY);
/// How many requests reached the upstream.
static HITS: AtomicU32 = AtomicU32::new(0);

async fn upstream(what: &str) -> Result<String, AppError> {
    HITS.fetch_add(1, Ordering::SeqCst);
    match UPSTREAM.load(Ordering::SeqCst) {
        HEALTHY => {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(format!("{what}: ok"))
        }
        FAILING => Err(AppError::Upstream("500 Internal Server Error")),
        _ => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(format!("{what}: very late"))
        }
    }
}

fn set_upstream(mode: u8, label: &str) {
    UPSTREAM.store(mode, Ordering::SeqCst);
    println!("  [the upstream is now {label}]");
}

fn show<T: std::fmt::Debug>(label: &str, result: &Result<T, AppError>, took: Duration) {
    match result {
        Ok(value) => println!("  {label} -> Ok({value:?}) in {took:.0?}"),
        Err(error) => println!("  {label} -> Err({error}) in {took:.0?}"),
    }
}

// The lag section needs the runtime's only thread to be the one the job blocks.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("resiliency tour (lines starting with >> are breaker state changes)");
    breaker_tour::run().await;
    too_busy_tour::run().await;
    too_busy_tour::auto_limit().await;
    race_retry_tour::run().await;
    timeout_tour::run().await;
    rate_limit_tour::run().await;
    stacking_tour::run().await;
    settings_tour::run().await;
    replicas_tour::run().await.expect("servers on 127.0.0.1");
    println!("\nThat is every policy; the tests in tests/ check each behaviour shown here.");
}
