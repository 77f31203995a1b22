//! The `tracing` events of `#[race_retry]`, in a test binary of its own (a subscriber scoped to one
//! test thread would race with callsites registered by tests on other threads).

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use resiliency::{race_retry, Rejected};
use tokio::time::sleep;

mod support;
use support::Captured;

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Attempt 1 hangs; attempt 2 answers in 20 ms.
#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn traced() -> Result<u32, Rejected> {
    let n = ATTEMPTS.fetch_add(1, SeqCst) + 1;
    if n == 1 {
        std::future::pending::<()>().await;
    }
    sleep(Duration::from_millis(20)).await;
    Ok(n)
}

static BACKED_OFF: AtomicU32 = AtomicU32::new(0);

/// An attempt's error, or a refusal.
#[derive(Debug)]
#[allow(dead_code)]
enum Error {
    Failed,
    Refused(Rejected),
}

impl From<Rejected> for Error {
    fn from(rejected: Rejected) -> Self {
        Error::Refused(rejected)
    }
}

/// Attempt 1 fails at once; attempt 2 answers at once.
#[race_retry(retries = 1, after = "150ms", total = "450ms", backoff = "20ms")]
async fn traced_backoff() -> Result<u32, Error> {
    match BACKED_OFF.fetch_add(1, SeqCst) + 1 {
        1 => Err(Error::Failed),
        n => Ok(n),
    }
}

/// Every attempt's end is a DEBUG event with target `resiliency::race_retry` and message
/// "attempt ended", with the fn's name, the attempt's number, its start and duration in whole
/// microseconds, and its outcome: the winner (attempt 2: 150 ms, 20 ms) and the loser (attempt 1:
/// 0 ms, 170 ms). A failure's backoff is one too ("backing off after a failure"), with the wait
/// drawn and when the next attempt starts, in whole microseconds.
#[tokio::test(start_paused = true)]
async fn attempts_are_tracing_events() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    assert_eq!(traced().await.unwrap(), 2);
    assert_eq!(traced_backoff().await.unwrap(), 2);
    drop(guard);

    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let ended: Vec<&str> = output
        .lines()
        .filter(|line| line.contains("attempt ended") && line.contains("::traced\""))
        .collect();
    assert_eq!(ended.len(), 2, "{output}");
    for line in &ended {
        assert!(
            line.contains("DEBUG")
                && line.contains("resiliency::race_retry")
                && line.contains("name=\"race_retry_tracing::traced\""),
            "{line}"
        );
    }
    let field = |line: &str, field: &str| {
        let at = line
            .find(&format!(" {field}="))
            .unwrap_or_else(|| panic!("no {field} in {line}"));
        let rest = &line[at + field.len() + 2..];
        rest.split(' ').next().unwrap().to_owned()
    };
    let fields =
        |line: &str| ["attempt", "started_us", "elapsed_us", "outcome"].map(|f| field(line, f));
    assert_eq!(
        fields(ended[0]),
        ["2", "150000", "20000", "Won"],
        "{}",
        ended[0]
    );
    assert_eq!(
        fields(ended[1]),
        ["1", "0", "170000", "Lost"],
        "{}",
        ended[1]
    );

    let backoffs: Vec<&str> = output
        .lines()
        .filter(|line| line.contains("backing off after a failure"))
        .collect();
    assert_eq!(backoffs.len(), 1, "{output}");
    let line = backoffs[0];
    assert!(
        line.contains("name=\"race_retry_tracing::traced_backoff\""),
        "{line}"
    );
    assert_eq!(field(line, "attempt"), "2", "{line}");
    let wait: u64 = field(line, "backoff_us")
        .parse()
        .expect("whole microseconds");
    assert!(wait < 20_000, "{line}");
    assert_eq!(field(line, "starts_in_us"), wait.to_string(), "{line}");

    // Every duration is whole microseconds.
    for line in output.lines() {
        for part in line.split(' ').filter(|p| p.contains("_us=")) {
            let value = part.split('=').nth(1).unwrap();
            assert!(value.parse::<u64>().is_ok(), "{part} in {line}");
        }
        assert!(!line.contains("_ms="), "{line}");
    }
}
