//! Attempt-aware hedging: `#[race_retry(attempt = n)]` gives the body the attempt's number (0 for
//! the first attempt, 1 for the first retry), and `race_retry::numbered` gives it to a closure
//! for `RaceRetry::run`, so that a retry can go to another replica.

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Mutex;

use resiliency::race_retry::{numbered, observe, Outcome, RaceRetry};
use resiliency::{race_retry, Rejected};
use support::{ms, BoxError};

/// Two replicas: the first hangs, the second answers in 20 ms.
async fn replica(index: u32) -> Result<&'static str, BoxError> {
    match index % 2 {
        0 => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        _ => {
            tokio::time::sleep(ms(20)).await;
            Ok("replica-b")
        }
    }
}

#[race_retry(retries = 2, after = "100ms", total = "1s", attempt = n)]
async fn hedged() -> Result<&'static str, BoxError> {
    replica(n).await
}

#[tokio::test(start_paused = true)]
async fn the_hedge_goes_to_the_other_replica() {
    let started = tokio::time::Instant::now();
    let (answer, attempts) = observe(hedged()).await;
    assert_eq!(answer.unwrap(), "replica-b");
    // Attempt 0 to replica a (hangs), attempt 1 to replica b at 100 ms, done at 120 ms.
    assert_eq!(started.elapsed(), ms(120));
    let outcomes: Vec<_> = attempts.iter().map(|a| (a.number, a.outcome)).collect();
    assert_eq!(outcomes, [(2, Outcome::Won), (1, Outcome::Lost)]);
}

struct Client {
    replicas: Vec<&'static str>,
    seen: Mutex<Vec<u32>>,
}

impl Client {
    /// A method with borrowed and owned arguments, the number named `attempt`.
    #[race_retry(retries = 2, after = "50ms", total = "1s", attempt = attempt)]
    async fn get(&self, path: String, _tag: &str) -> Result<String, BoxError> {
        self.seen.lock().unwrap().push(attempt);
        let replica = self.replicas[attempt as usize % self.replicas.len()];
        if attempt < 2 {
            return Err(format!("{replica} failed").into());
        }
        Ok(format!("{replica}{path}"))
    }
}

#[tokio::test(start_paused = true)]
async fn every_attempt_sees_its_own_number() {
    let client = Client {
        replicas: vec!["a", "b", "c"],
        seen: Mutex::new(Vec::new()),
    };
    assert_eq!(client.get("/x".into(), "t").await.unwrap(), "c/x");
    assert_eq!(*client.seen.lock().unwrap(), [0, 1, 2]);
}

fn is_retryable(error: &BoxError) -> bool {
    !error.to_string().contains("fatal")
}

fn fell_back(_key: u32, why: Rejected) -> Result<u32, BoxError> {
    assert!(why.is_deadline());
    Ok(u32::MAX)
}

/// With `retry_if` and a `fallback`: numbers still count up, and the deadline falls back.
#[race_retry(retries = 3, after = "100ms", total = "250ms", attempt = k, retry_if = is_retryable, fallback = fell_back)]
async fn with_everything(key: u32) -> Result<u32, BoxError> {
    if k == 0 && key == 0 {
        return Err("fatal".into());
    }
    std::future::pending::<()>().await;
    Ok(key + k)
}

#[tokio::test(start_paused = true)]
async fn numbers_with_retry_if_and_fallback() {
    assert_eq!(with_everything(0).await.unwrap_err().to_string(), "fatal");
    assert_eq!(with_everything(1).await.unwrap(), u32::MAX);
}

#[tokio::test(start_paused = true)]
async fn the_builder_gives_numbers_through_numbered() {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let race: &'static RaceRetry = RaceRetry::builder("attempts-builder")
        .retries(1)
        .after(ms(100))
        .total(ms(500))
        .register()
        .unwrap();
    let answer = race
        .run(numbered(|attempt| async move {
            CALLS.fetch_add(1, SeqCst);
            replica(attempt).await
        }))
        .await;
    assert_eq!(answer.unwrap(), "replica-b");
    assert_eq!(CALLS.load(SeqCst), 2);
    // A closure with no argument still works, as it always did.
    let plain: Result<u32, BoxError> = race.run(|| async { Ok(1) }).await;
    assert_eq!(plain.unwrap(), 1);
    // And with `run_if`.
    let judged: Result<u32, BoxError> = race
        .run_if(|_: &BoxError| false, numbered(|n| async move { Ok(n) }))
        .await;
    assert_eq!(judged.unwrap(), 0);
    let _ = resiliency::race_retry::get("attempts-builder").unwrap();
}
