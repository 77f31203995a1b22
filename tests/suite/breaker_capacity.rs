//! The `capacity` claim: a worker that keeps calling a dead endpoint through
//! `#[breaker(capacity = c, timeout = t)]` spends a share `1 - c` of its time inside calls (each
//! runs into `timeout`) and is free the other share `c`.
//!
//! Run with `cargo test --test suite breaker_capacity:: -- --nocapture` to see the table.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::{Rejected, RejectedKind};
use tokio::time::{sleep, Instant};

use crate::support;
use support::BoxError;

/// The timeout every capacity breaker below uses.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Probing cycles (one timed-out call, then the open time) per measurement.
const CYCLES: u32 = 200;

/// A dead endpoint: the call never answers.
async fn dead(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    ran.store(true, Ordering::SeqCst);
    std::future::pending().await
}

#[resiliency::breaker(name = "capacity.0.25", capacity = 0.25, timeout = "1s")]
async fn dead_25(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

#[resiliency::breaker(name = "capacity.0.5", capacity = 0.5, timeout = "1s")]
async fn dead_50(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

#[resiliency::breaker(name = "capacity.0.75", capacity = 0.75, timeout = "1s")]
async fn dead_75(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

#[resiliency::breaker(name = "capacity.0.9", capacity = 0.9, timeout = "1s")]
async fn dead_90(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

// The same, with an explicit `error_window` long enough for three timeouts in a row to fall within
// it, so that the breaker opens whatever `c` is.

#[resiliency::breaker(
    name = "capacity.window.0.25",
    capacity = 0.25,
    timeout = "1s",
    error_window = "1m"
)]
async fn dead_window_25(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

#[resiliency::breaker(
    name = "capacity.window.0.5",
    capacity = 0.5,
    timeout = "1s",
    error_window = "1m"
)]
async fn dead_window_50(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

#[resiliency::breaker(
    name = "capacity.window.0.75",
    capacity = 0.75,
    timeout = "1s",
    error_window = "1m"
)]
async fn dead_window_75(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

#[resiliency::breaker(
    name = "capacity.window.0.9",
    capacity = 0.9,
    timeout = "1s",
    error_window = "1m"
)]
async fn dead_window_90(ran: Arc<AtomicBool>) -> Result<(), BoxError> {
    dead(ran).await
}

struct Measured {
    capacity: f64,
    name: &'static str,
    busy: Duration,
    total: Duration,
    body_runs: u32,
    refusals: u32,
}

impl Measured {
    fn expected_busy(&self) -> f64 {
        1.0 - self.capacity
    }

    fn busy_share(&self) -> f64 {
        self.busy.as_secs_f64() / self.total.as_secs_f64()
    }
}

/// Calls `endpoint` in a loop until its body has run `CYCLES + 3` times (three to open the
/// breaker, then one probe per cycle); when refused, does other work for `TIMEOUT / 100` and tries
/// again. Busy time is the time spent inside calls whose body ran.
async fn worker<F, Fut>(capacity: f64, name: &'static str, endpoint: F) -> Measured
where
    F: Fn(Arc<AtomicBool>) -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let step = TIMEOUT / 100;
    let start = Instant::now();
    let mut busy = Duration::ZERO;
    let mut body_runs = 0;
    let mut refusals = 0;
    while body_runs < CYCLES + 3 {
        let ran = Arc::new(AtomicBool::new(false));
        let before = Instant::now();
        let error = endpoint(ran.clone()).await.unwrap_err();
        let took = before.elapsed();
        let rejected = error
            .downcast_ref::<Rejected>()
            .unwrap_or_else(|| panic!("a dead endpoint only ends in a Rejected, got {error}"));
        assert_eq!(rejected.name(), name);
        if ran.load(Ordering::SeqCst) {
            assert_eq!(rejected.kind(), RejectedKind::Timeout, "{rejected}");
            assert_eq!(took, TIMEOUT, "a call that ran is abandoned at the timeout");
            busy += took;
            body_runs += 1;
        } else {
            assert_eq!(rejected.kind(), RejectedKind::CircuitOpen, "{rejected}");
            assert_eq!(took, Duration::ZERO, "a refusal is immediate");
            refusals += 1;
            sleep(step).await; // other work
        }
    }
    if refusals > 0 {
        let state = breaker::get(name).expect("registered").state();
        assert_eq!(
            state,
            State::Open,
            "{name}: the last probe timed out and re-opened it"
        );
    }
    Measured {
        capacity,
        name,
        busy,
        total: start.elapsed(),
        body_runs,
        refusals,
    }
}

fn expected_error_timeout(capacity: f64) -> Duration {
    Duration::from_secs_f64(TIMEOUT.as_secs_f64() * capacity / (1.0 - capacity))
}

/// Prints the table, then checks every row: error_timeout = timeout * c / (1 - c), and the
/// worker was busy 1 - c of the time, within 2 percentage points.
fn print_and_check(title: &str, rows: &[Measured]) {
    println!();
    println!(
        "{title}: {CYCLES} cycles, timeout {TIMEOUT:?}, step {:?}",
        TIMEOUT / 100
    );
    println!("capacity | expected busy | measured busy | error_timeout | body runs | refusals | paused time");
    println!("---------|---------------|---------------|---------------|-----------|----------|------------");
    for row in rows {
        let open_for = breaker::get(row.name).expect("registered").error_timeout();
        println!(
            "{:>8} | {:>12.2}% | {:>12.2}% | {:>13} | {:>9} | {:>8} | {:?}",
            row.capacity,
            row.expected_busy() * 100.0,
            row.busy_share() * 100.0,
            format!("{open_for:?}"),
            row.body_runs,
            row.refusals,
            row.total
        );
    }
    for row in rows {
        let b = breaker::get(row.name).expect("registered by the first call");
        let open_for = b.error_timeout();
        let expected = expected_error_timeout(row.capacity);
        assert!(
            open_for.max(expected) - open_for.min(expected) <= Duration::from_micros(1),
            "{}: error_timeout {open_for:?}, expected timeout * c / (1 - c) = {expected:?}",
            row.name
        );
    }
    for row in rows {
        assert!(
            (row.busy_share() - row.expected_busy()).abs() <= 0.02,
            "{}: busy {:.2}% of {:?}, expected {:.2}% +- 2 points ({} refusals: the breaker {})",
            row.name,
            row.busy_share() * 100.0,
            row.total,
            row.expected_busy() * 100.0,
            row.refusals,
            if row.refusals == 0 {
                "never opened"
            } else {
                "opened"
            },
        );
    }
}

/// The claim as documented: only `capacity` and `timeout`, every other option at its default.
#[tokio::test(start_paused = true)]
async fn a_worker_probing_a_dead_endpoint_is_busy_one_minus_capacity_of_the_time() {
    let rows = [
        worker(0.25, "capacity.0.25", dead_25).await,
        worker(0.5, "capacity.0.5", dead_50).await,
        worker(0.75, "capacity.0.75", dead_75).await,
        worker(0.9, "capacity.0.9", dead_90).await,
    ];
    print_and_check("capacity + timeout, defaults otherwise", &rows);
}

/// The same claim with `error_window = "1m"`, so that the three timeouts that open the breaker fall
/// within the window for every `c`: this isolates the open/half-open cycle from the opening rule.
#[tokio::test(start_paused = true)]
async fn with_a_long_error_window_the_busy_share_is_one_minus_capacity() {
    let rows = [
        worker(0.25, "capacity.window.0.25", dead_window_25).await,
        worker(0.5, "capacity.window.0.5", dead_window_50).await,
        worker(0.75, "capacity.window.0.75", dead_window_75).await,
        worker(0.9, "capacity.window.0.9", dead_window_90).await,
    ];
    print_and_check("capacity + timeout + error_window = 1m", &rows);
}

#[resiliency::breaker(name = "capacity.0.75_60s", capacity = 0.75, timeout = "60s")]
async fn sixty_seconds() -> Result<(), BoxError> {
    Ok(())
}

#[resiliency::breaker(name = "capacity.0.5_250ms", capacity = 0.5, timeout = "250ms")]
async fn quarter_second() -> Result<(), BoxError> {
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn capacity_sets_error_timeout_to_timeout_times_c_over_one_minus_c() {
    sixty_seconds().await.unwrap();
    quarter_second().await.unwrap();
    assert_eq!(
        breaker::get("capacity.0.75_60s").unwrap().error_timeout(),
        Duration::from_secs(180)
    );
    assert_eq!(
        breaker::get("capacity.0.5_250ms").unwrap().error_timeout(),
        Duration::from_millis(250)
    );
}
