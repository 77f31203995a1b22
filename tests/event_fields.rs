//! Every policy's `tracing` events name their site the same way: a field `name` (with `policy`
//! where several policies share the target, and `key` for a keyed breaker). Its own test binary,
//! with a single test: `tracing` caches whether a callsite is enabled process-wide, so a
//! subscriber set for one thread sees events reliably only while no other test's thread hits the
//! same callsites.

mod support;

use std::time::Duration;

use resiliency::{breaker, race_retry, rate_limit, timeout, too_busy, Breaker, Rejected};

use support::BoxError;

#[too_busy(name = "fields.too_busy", max_in_flight = 1)]
async fn shed() -> Result<(), Rejected> {
    tokio::task::yield_now().await;
    Ok(())
}

#[race_retry(name = "fields.race", retries = 1, after = "10ms", total = "1s")]
async fn raced() -> Result<u32, Rejected> {
    Ok(1)
}

fn quiet(_why: Rejected) -> Result<u32, BoxError> {
    Ok(0)
}

#[breaker(name = "fields.fallback", error_threshold = 1, error_timeout = "30s", fallback = quiet)]
async fn fails() -> Result<u32, BoxError> {
    Err("down".into())
}

#[timeout(name = "fields.timeout", total = "10ms")]
async fn late() -> Result<(), Rejected> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(())
}

#[rate_limit(name = "fields.rate_limit", rate = "1/h", burst = 1)]
async fn limited() -> Result<(), Rejected> {
    Ok(())
}

/// The lines of `text` from `target` whose message is `message`.
fn events<'a>(text: &'a str, target: &str, message: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| line.contains(&format!("{target}:")) && line.contains(message))
        .collect()
}

#[test]
fn every_event_names_its_site_in_a_name_field() {
    let captured = support::Captured::default();
    let rt = support::paused_runtime();
    tracing::subscriber::with_default(captured.subscriber(), || {
        rt.block_on(async {
            let b = Breaker::builder("fields.breaker")
                .error_threshold(1)
                .error_timeout(Duration::from_millis(20))
                .build()
                .unwrap();
            let _ = b.call(async { Err::<(), BoxError>("down".into()) }).await;
            tokio::time::sleep(Duration::from_millis(25)).await;
            b.call(async { Ok::<_, BoxError>(()) }).await.unwrap();

            let keyed = Breaker::builder("fields.keyed")
                .error_threshold(1)
                .build_keyed()
                .unwrap();
            let _ = keyed
                .breaker("host-a")
                .call(async { Err::<(), BoxError>("down".into()) })
                .await;

            let (a, b) = tokio::join!(shed(), shed());
            assert!(a.is_ok() && b.unwrap_err().is_too_busy());

            assert_eq!(raced().await.unwrap(), 1);

            assert!(fails().await.is_err());
            assert_eq!(fails().await.unwrap(), 0);

            assert!(late().await.unwrap_err().is_timeout());

            limited().await.unwrap();
            assert!(limited().await.unwrap_err().is_rate_limited());
        })
    });
    let text = captured.text();

    for message in [
        "circuit breaker opened",
        "circuit breaker half-open",
        "circuit breaker closed",
    ] {
        let lines = events(&text, "resiliency::breaker", message);
        let line = lines
            .iter()
            .find(|line| line.contains("name=\"fields.breaker\""))
            .unwrap_or_else(|| panic!("no `{message}` event of fields.breaker in:\n{text}"));
        assert!(!line.contains("breaker="), "{line}");
    }
    let opened = events(&text, "resiliency::breaker", "circuit breaker opened");
    assert!(
        opened
            .iter()
            .any(|line| line.contains("name=\"fields.keyed\"") && line.contains("key=\"host-a\"")),
        "{text}"
    );

    let refused = events(&text, "resiliency::too_busy", "call refused");
    assert!(
        refused
            .iter()
            .any(|line| line.contains("name=\"fields.too_busy\"") && !line.contains("guard=")),
        "{text}"
    );

    let ended = events(&text, "resiliency::race_retry", "attempt ended");
    assert!(
        ended
            .iter()
            .any(|line| line.contains("name=\"fields.race\"")),
        "{text}"
    );

    let timed_out = events(&text, "resiliency::timeout", "call timed out");
    assert!(
        timed_out
            .iter()
            .any(|line| line.contains("name=\"fields.timeout\"") && line.contains("total_ms=10")),
        "{text}"
    );

    let refused = events(&text, "resiliency::rate_limit", "call refused");
    assert!(
        refused
            .iter()
            .any(|line| line.contains("name=\"fields.rate_limit\"")
                && line.contains("rate=1/h")
                && line.contains("retry_after_ms=")),
        "{text}"
    );

    let fell_back = events(&text, "resiliency::fallback", "the call fell back");
    assert!(
        fell_back
            .iter()
            .any(|line| line.contains("policy=\"breaker\"")
                && line.contains("name=\"fields.fallback\"")),
        "{text}"
    );
}
