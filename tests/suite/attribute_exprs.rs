//! Numbers and durations written as consts, paths and expressions: they take effect like the
//! literals, and one out of range is refused at the site's first use, with the message the
//! literal gets at compile time, as an error-level `tracing` event, while the call still runs.

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use resiliency::{breaker, race_retry, too_busy, Rejected};
use tokio::time::{sleep, Instant};

use crate::support;
use support::{rejected, BoxError, Captured};

const THRESHOLD: u32 = 2;
const OPEN_SECS: u64 = 15;

mod config {
    use std::time::Duration;

    pub const AFTER: Duration = Duration::from_millis(150);
    pub static LIMIT: u32 = 1;
}

fn total() -> Duration {
    config::AFTER * 3
}

/// Opens on the second error (the default is the third), for 30 s.
#[breaker(error_threshold = THRESHOLD, error_timeout = Duration::from_secs(2 * OPEN_SECS))]
async fn fetch(ok: bool) -> Result<&'static str, BoxError> {
    if ok {
        Ok("data")
    } else {
        Err("upstream failed".into())
    }
}

#[tokio::test(start_paused = true)]
async fn a_breaker_takes_its_settings_from_consts_and_expressions() {
    assert!(fetch(false).await.is_err());
    assert!(fetch(false).await.is_err());
    let refused = fetch(true).await.unwrap_err();
    assert!(rejected(&refused).is_circuit_open(), "{refused}");
    sleep(Duration::from_secs(29)).await;
    assert!(rejected(&fetch(true).await.unwrap_err()).is_circuit_open());
    sleep(Duration::from_secs(1)).await;
    assert_eq!(fetch(true).await.unwrap(), "data");
}

/// One call at a time, from a static.
#[too_busy(max_in_flight = config::LIMIT)]
async fn exclusive() -> Result<(), Rejected> {
    tokio::task::yield_now().await;
    Ok(())
}

#[tokio::test]
async fn a_guard_takes_its_settings_from_a_static() {
    let (a, b) = tokio::join!(exclusive(), exclusive());
    assert!(a.is_ok());
    assert!(b.unwrap_err().is_too_busy());
}

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Attempt 1 hangs; attempt 2 starts at `config::AFTER` and answers 20 ms later.
#[race_retry(retries = THRESHOLD - 1, after = config::AFTER, total = total())]
async fn lookup() -> Result<u32, Rejected> {
    let n = ATTEMPTS.fetch_add(1, SeqCst) + 1;
    if n == 1 {
        std::future::pending::<()>().await;
    }
    sleep(Duration::from_millis(20)).await;
    Ok(n)
}

/// Every attempt hangs: the call ends at `total`.
#[race_retry(after = config::AFTER, total = total())]
async fn hangs() -> Result<u32, Rejected> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn a_race_takes_its_settings_from_paths_and_calls() {
    let started = Instant::now();
    assert_eq!(lookup().await.unwrap(), 2);
    assert_eq!(started.elapsed(), Duration::from_millis(170));

    let started = Instant::now();
    assert!(hangs().await.unwrap_err().is_deadline());
    assert_eq!(started.elapsed(), Duration::from_millis(450));
}

const NO_LIMIT: u32 = 0;
const NO_TIME: Duration = Duration::ZERO;
const FULL: f64 = 1.5;

#[too_busy(max_in_flight = NO_LIMIT)]
async fn unlimited() -> Result<u32, Rejected> {
    Ok(1)
}

#[race_retry(total = NO_TIME)]
async fn untimed() -> Result<u32, Rejected> {
    Ok(2)
}

#[breaker(capacity = FULL, timeout = "2s")]
async fn overfull() -> Result<u32, Rejected> {
    Ok(3)
}

/// The message the literal gets at compile time: the first line of its trybuild case's .stderr.
fn compile_time_message(case: &str) -> String {
    let path = format!("{}/tests/ui/{case}.stderr", env!("CARGO_MANIFEST_DIR"));
    let stderr = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let first = stderr.lines().next().unwrap();
    first.strip_prefix("error: ").unwrap().to_owned()
}

/// A const out of range compiles (the compiler cannot read it), is refused by the builder at the
/// site's first use with the same text the literal gets at compile time (`max_in_flight = 0`,
/// `total = "0s"`, `capacity = 1.5`), reported once as an error-level event, and the call runs
/// on.
#[tokio::test]
async fn a_const_out_of_range_is_refused_at_first_use_with_the_compile_time_message() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    assert_eq!(unlimited().await.unwrap(), 1);
    assert_eq!(untimed().await.unwrap(), 2);
    assert_eq!(overfull().await.unwrap(), 3);
    // Once: the site keeps what it fell back to.
    assert_eq!(unlimited().await.unwrap(), 1);
    drop(guard);

    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for (case, site) in [
        (
            "too_busy/fail/max_in_flight_zero",
            "attribute_exprs::unlimited",
        ),
        ("race_retry/fail/total_zero", "attribute_exprs::untimed"),
        (
            "breaker/fail/capacity_above_one",
            "attribute_exprs::overfull",
        ),
    ] {
        let message = compile_time_message(case);
        let errors: Vec<&str> = output
            .lines()
            .filter(|line| line.contains(" ERROR ") && line.contains(&message))
            .collect();
        assert_eq!(errors.len(), 1, "{case}: `{message}` in\n{output}");
        assert!(errors[0].contains(site), "{case}: {}", errors[0]);
    }
}

static RACE_TOTAL_READS: AtomicU32 = AtomicU32::new(0);
static GUARD_LIMIT_READS: AtomicU32 = AtomicU32::new(0);
static BREAKER_THRESHOLD_READS: AtomicU32 = AtomicU32::new(0);

fn counted_total() -> Duration {
    RACE_TOTAL_READS.fetch_add(1, SeqCst);
    Duration::from_millis(450)
}

fn counted_limit() -> u32 {
    GUARD_LIMIT_READS.fetch_add(1, SeqCst);
    4
}

fn counted_threshold() -> u32 {
    BREAKER_THRESHOLD_READS.fetch_add(1, SeqCst);
    3
}

#[race_retry(retries = 1, after = "100ms", total = counted_total())]
async fn raced_once() -> Result<(), Rejected> {
    Ok(())
}

#[too_busy(max_in_flight = counted_limit())]
async fn guarded_once() -> Result<(), Rejected> {
    Ok(())
}

#[breaker(error_threshold = counted_threshold())]
async fn broken_once() -> Result<(), Rejected> {
    Ok(())
}

/// An expression is evaluated once, at the site's first call, however many calls follow.
#[tokio::test(start_paused = true)]
async fn an_expression_is_evaluated_once() {
    for _ in 0..3 {
        raced_once().await.unwrap();
        guarded_once().await.unwrap();
        broken_once().await.unwrap();
    }
    assert_eq!(RACE_TOTAL_READS.load(SeqCst), 1);
    assert_eq!(GUARD_LIMIT_READS.load(SeqCst), 1);
    assert_eq!(BREAKER_THRESHOLD_READS.load(SeqCst), 1);
}
