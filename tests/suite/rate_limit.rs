//! `#[rate_limit]`, `RateLimit::builder` and `RateLimitLayer`: what the docs promise, on a paused
//! clock (and one stress test on the real clock), and the rate limit's "Guarantees".

use crate::support::{self, ms, secs};

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use resiliency::rate_limit;
use resiliency::rate_limit::{Rate, RateLimit};
use resiliency::settings::{self, Policy};
use resiliency::{timeout, Rejected, RejectedKind};
use tokio::time::{advance, Instant};

fn limit(name: &'static str, rate: Rate, burst: u32) -> RateLimit {
    RateLimit::builder(name)
        .rate(rate)
        .burst(burst)
        .build()
        .unwrap()
}

async fn ok(limit: &RateLimit) -> Result<(), Rejected> {
    limit.call(async { Ok::<_, Rejected>(()) }).await
}

#[tokio::test(start_paused = true)]
async fn a_burst_then_one_call_per_interval_and_the_refusal_says_when() {
    let limit = limit("rate::pacing", Rate::per_second(10), 3);
    for _ in 0..3 {
        ok(&limit).await.unwrap();
    }
    let refused = ok(&limit).await.unwrap_err();
    assert_eq!(refused.kind(), RejectedKind::RateLimited);
    assert!(refused.is_rate_limited());
    assert_eq!(refused.retry_after(), Some(ms(100)));
    assert_eq!(refused.name(), "rate::pacing");
    assert_eq!(
        refused.to_string(),
        "`rate::pacing` is over its rate limit of 10/s; the next permit frees in 100ms"
    );
    advance(ms(99)).await;
    assert_eq!(ok(&limit).await.unwrap_err().retry_after(), Some(ms(1)));
    advance(ms(1)).await;
    ok(&limit).await.unwrap();
    assert!(ok(&limit).await.is_err());
    // A quiet while frees the whole burst again, never more.
    advance(secs(10)).await;
    assert_eq!(limit.available(), 3);
    for _ in 0..3 {
        ok(&limit).await.unwrap();
    }
    assert!(ok(&limit).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn over_any_span_at_most_span_over_interval_plus_burst_calls_are_admitted() {
    // Calls at uneven times over 10 s: at every moment, the calls admitted within any window
    // are within the bound.
    let limit = limit("rate::bound", Rate::new(5, ms(100)), 4); // interval 20 ms
    let start = Instant::now();
    let mut admitted: Vec<Duration> = Vec::new();
    let mut step = 1u64;
    while start.elapsed() < secs(10) {
        for _ in 0..(step % 7) {
            if ok(&limit).await.is_ok() {
                admitted.push(start.elapsed());
            }
        }
        step = step * 31 % 97 + 1;
        advance(ms(step % 13)).await;
    }
    for (i, from) in admitted.iter().enumerate() {
        for (j, to) in admitted.iter().enumerate().skip(i) {
            let span = (*to - *from).as_nanos() as u64;
            let bound = span / 20_000_000 + 4;
            assert!(
                (j - i + 1) as u64 <= bound,
                "{} calls admitted in {span} ns",
                j - i + 1
            );
        }
    }
    // And the limit is used: 10 s at 50/s, with the burst.
    assert!(admitted.len() >= 480, "{}", admitted.len());
}

#[rate_limit(rate = "5/s", burst = 1, max_wait = "500ms")]
async fn paced(
    order: u64,
    log: &std::sync::Mutex<Vec<(u64, Duration)>>,
    start: Instant,
) -> Result<u64, Rejected> {
    log.lock().unwrap().push((order, start.elapsed()));
    Ok(order)
}

#[tokio::test(start_paused = true)]
async fn with_max_wait_calls_wait_in_the_order_they_came_and_one_past_it_is_refused_at_once() {
    let log = std::sync::Mutex::new(Vec::new());
    let start = Instant::now();
    let (a, b, c, d) = tokio::join!(
        paced(1, &log, start),
        paced(2, &log, start),
        paced(3, &log, start),
        paced(4, &log, start)
    );
    assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (1, 2, 3));
    let refused = d.unwrap_err();
    assert_eq!(refused.retry_after(), Some(ms(600)));
    assert_eq!(
        *log.lock().unwrap(),
        [(1, ms(0)), (2, ms(200)), (3, ms(400))],
        "one permit every 200 ms, first come first served"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_it_waits_gives_its_permit_back_when_no_later_call_took_one() {
    let limit = RateLimit::builder("rate::give_back")
        .rate(Rate::per_second(10))
        .burst(1)
        .max_wait(secs(1))
        .build()
        .unwrap();
    ok(&limit).await.unwrap(); // the burst
    let mut waiting = Box::pin(ok(&limit));
    assert!(support::poll_once(waiting.as_mut()).await.is_pending());
    assert_eq!(limit.available(), 0);
    drop(waiting);
    // Its permit is back: the next call waits 100 ms, not 200.
    let started = Instant::now();
    ok(&limit).await.unwrap();
    assert_eq!(started.elapsed(), ms(100));

    // Two waiting, the first dropped: the second keeps its place, the first permit is spent.
    let mut first = Box::pin(ok(&limit));
    let mut second = Box::pin(ok(&limit));
    assert!(support::poll_once(first.as_mut()).await.is_pending());
    assert!(support::poll_once(second.as_mut()).await.is_pending());
    drop(first);
    let started = Instant::now();
    second.await.unwrap();
    assert_eq!(started.elapsed(), ms(200));
    // A call never polled took nothing.
    advance(secs(1)).await;
    drop(ok(&limit));
    assert_eq!(limit.available(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_the_callers_deadline_is_refused_at_once() {
    #[rate_limit(
        name = "rate::under_deadline",
        rate = "1/s",
        burst = 1,
        max_wait = "5s"
    )]
    async fn limited() -> Result<(), Rejected> {
        Ok(())
    }
    #[timeout("300ms")]
    async fn bounded() -> Result<(), Rejected> {
        limited().await
    }
    bounded().await.unwrap();
    let started = Instant::now();
    let refused = bounded().await.unwrap_err();
    assert!(refused.is_rate_limited(), "{refused}");
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "refused at once, not at the deadline"
    );
    // Without the deadline, it waits (the refused call gave back the permit it had reserved).
    let started = Instant::now();
    limited().await.unwrap();
    assert_eq!(started.elapsed(), secs(1));
}

#[tokio::test(start_paused = true)]
async fn the_short_form_and_expressions_and_a_shared_name_with_settings_by_name() {
    const RATE: Rate = Rate::per_second(2);
    #[rate_limit("2/s", name = "rate::shared")]
    async fn short() -> Result<(), Rejected> {
        Ok(())
    }
    #[rate_limit(rate = RATE, burst = 2, name = "rate::shared")]
    async fn long() -> Result<(), Rejected> {
        Ok(())
    }
    short().await.unwrap();
    long().await.unwrap();
    assert!(short().await.unwrap_err().is_rate_limited());
    let shared = rate_limit::get("rate::shared").unwrap();
    assert_eq!(shared.rate(), Rate::per_second(2));
    assert_eq!(shared.burst(), 2);
    // Raised at run time: the calls admitted keep counting (no new burst), then the new pace.
    settings::set(Policy::RateLimit, "rate::shared", "rate", "20/s").unwrap();
    assert_eq!(shared.rate(), Rate::per_second(20));
    advance(ms(50)).await;
    short().await.unwrap();
    assert!(
        settings::set(Policy::RateLimit, "rate::shared", "rate", "0/s").is_err(),
        "refused by the rules"
    );
    assert!(settings::set(Policy::RateLimit, "rate::shared", "burst", 0).is_err());
    settings::unset(Policy::RateLimit, "rate::shared", "rate").unwrap();
    assert_eq!(shared.rate(), Rate::per_second(2));
}

#[tokio::test(start_paused = true)]
async fn the_builder_refuses_what_the_attribute_refuses() {
    let missing = RateLimit::builder("rate::rules").build().unwrap_err();
    assert!(
        missing.to_string().contains("`rate` is required"),
        "{missing}"
    );
    let zero = RateLimit::builder("rate::rules")
        .rate(Rate::per_second(0))
        .build()
        .unwrap_err();
    assert!(zero.to_string().contains("`rate` must be"), "{zero}");
    let burst = RateLimit::builder("rate::rules")
        .rate(Rate::per_second(1))
        .burst(0)
        .build()
        .unwrap_err();
    assert!(
        burst.to_string().contains("`burst` must be at least 1"),
        "{burst}"
    );
    let wait = RateLimit::builder("rate::rules")
        .rate(Rate::per_second(1))
        .max_wait(Duration::ZERO)
        .build()
        .unwrap_err();
    assert!(
        wait.to_string().contains("`max_wait` must be above zero"),
        "{wait}"
    );
}

#[test]
fn rates_parse_as_written_and_bad_ones_say_why() {
    assert_eq!(rate_limit::parse_rate("100/s"), Ok(Rate::per_second(100)));
    assert_eq!(rate_limit::parse_rate("5/m"), Ok(Rate::per_minute(5)));
    assert_eq!(
        rate_limit::parse_rate("10/100ms"),
        Ok(Rate::new(10, ms(100)))
    );
    assert_eq!(
        rate_limit::parse_rate("1000/1h"),
        Ok(Rate::new(1000, secs(3600)))
    );
    assert_eq!(Rate::new(10, ms(100)).to_string(), "10/100ms");
    assert_eq!(Rate::per_second(100).to_string(), "100/s");
    for bad in [
        "",
        "100",
        "/s",
        "x/s",
        "0/s",
        "5/",
        "5/0s",
        "5/parsec",
        "-1/s",
        "99999999999/s",
    ] {
        assert!(rate_limit::parse_rate(bad).is_err(), "{bad:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_fallback_answers_a_refused_call() {
    async fn later(id: u64, why: Rejected) -> Result<String, Rejected> {
        Ok(format!("queued {id} for {:?}", why.retry_after().unwrap()))
    }
    #[rate_limit(rate = "1/s", burst = 1, fallback = later)]
    async fn send(id: u64) -> Result<String, Rejected> {
        Ok(format!("sent {id}"))
    }
    assert_eq!(send(1).await.unwrap(), "sent 1");
    assert_eq!(send(2).await.unwrap(), "queued 2 for 1s");
}

#[test]
fn a_blocking_fn_is_limited_on_its_thread_and_waits_by_sleeping() {
    #[rate_limit(rate = "20/s", burst = 1, max_wait = "200ms")]
    fn write(n: u32) -> Result<u32, Rejected> {
        Ok(n)
    }
    let started = std::time::Instant::now();
    assert_eq!(write(1).unwrap(), 1);
    assert_eq!(write(2).unwrap(), 2); // slept about 50 ms for its permit
    assert!(started.elapsed() >= ms(45), "{:?}", started.elapsed());
    #[rate_limit(rate = "1/s", burst = 1)]
    fn once(n: u32) -> Result<u32, Rejected> {
        Ok(n)
    }
    assert_eq!(once(1).unwrap(), 1);
    assert!(once(2).unwrap_err().is_rate_limited());
}

#[test]
fn threads_together_never_get_more_than_the_rate_allows() {
    // The real clock, 4 threads for 300 ms at 2000/s with a burst of 50.
    let limit: &'static RateLimit =
        Box::leak(Box::new(limit("rate::threads", Rate::per_second(2000), 50)));
    let admitted = Arc::new(AtomicU64::new(0));
    let started = std::time::Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let admitted = admitted.clone();
            std::thread::spawn(move || {
                while started.elapsed() < ms(300) {
                    if limit.call_blocking(|| Ok::<_, Rejected>(())).is_ok() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let span = started.elapsed();
    let admitted = admitted.load(Ordering::Relaxed);
    let most = (span.as_secs_f64() * 2000.0) as u64 + 50;
    assert!(
        admitted <= most,
        "{admitted} admitted in {span:?}, at most {most}"
    );
    assert!(
        admitted >= most * 8 / 10,
        "{admitted} admitted in {span:?}: the limit was not used"
    );
}

#[tokio::test(start_paused = true)]
async fn each_key_has_a_limit_of_its_own() {
    #[rate_limit(rate = "1/s", burst = 2, key = client)]
    async fn per_client(client: &str, n: u32) -> Result<u32, Rejected> {
        Ok(n)
    }
    assert_eq!(per_client("a", 1).await.unwrap(), 1);
    assert_eq!(per_client("a", 2).await.unwrap(), 2);
    let refused = per_client("a", 3).await.unwrap_err();
    assert_eq!(refused.retry_after(), Some(secs(1)));
    assert_eq!(
        per_client("b", 4).await.unwrap(),
        4,
        "another key, a limit of its own"
    );
    advance(secs(1)).await;
    assert_eq!(per_client("a", 5).await.unwrap(), 5);
}

#[tokio::test(start_paused = true)]
async fn at_most_max_keys_are_held_keys_at_rest_go_first_and_the_rest_share_one_limit() {
    let limit = RateLimit::builder("rate::max_keys")
        .rate(Rate::per_second(1))
        .burst(1)
        .max_keys(2)
        .build()
        .unwrap();
    let call = |key: u32| limit.call_keyed(&key, async { Ok::<_, Rejected>(()) });
    call(1).await.unwrap();
    call(2).await.unwrap();
    assert_eq!(limit.keys_held(), 2);
    // Both keys busy: keys 3 and 4 share one limit.
    call(3).await.unwrap();
    assert!(call(4).await.unwrap_err().is_rate_limited());
    assert_eq!(limit.keys_held(), 2);
    // A second later every key is at rest: swept, and 3 and 4 get limits of their own.
    advance(secs(1)).await;
    call(3).await.unwrap();
    call(4).await.unwrap();
    assert!(call(3).await.unwrap_err().is_rate_limited());
    assert!(limit.keys_held() <= 2);
    // A key that was swept at rest is as good as new: nothing of its limit was lost.
    advance(secs(5)).await;
    call(1).await.unwrap();
    assert!(call(1).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn a_keyed_blocking_fn_and_keys_of_any_hash_type() {
    #[rate_limit(rate = "1/h", burst = 1, key = (tenant, region))]
    fn write(tenant: u64, region: &str) -> Result<(), Rejected> {
        let _ = (tenant, region);
        Ok(())
    }
    write(1, "eu").unwrap();
    assert!(write(1, "eu").unwrap_err().is_rate_limited());
    write(1, "us").unwrap();
    write(2, "eu").unwrap();
}

// Guarantees ----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_body_that_panics_spent_its_permit_and_the_next_call_follows_the_rule() {
    let limit = limit("rate::panics", Rate::per_second(10), 2);
    let caught = AssertUnwindSafe(limit.call(async {
        panic!("the body");
        #[allow(unreachable_code)]
        Ok::<(), Rejected>(())
    }))
    .catch_unwind()
    .await;
    assert!(caught.is_err());
    assert_eq!(limit.available(), 1);
    ok(&limit).await.unwrap();
    assert!(ok(&limit).await.is_err());
}

#[test]
fn without_a_time_driver_a_limit_without_a_wait_works_and_a_wait_panics_giving_its_permit_back() {
    let limit = RateLimit::builder("rate::no_driver")
        .rate(Rate::per_second(1))
        .burst(1)
        .max_wait(secs(5))
        .build()
        .unwrap();
    // Outside any runtime: admitted at once.
    support::block_on_without_tokio(ok(&limit)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let panic =
        std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(ok(&limit)))).unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap();
    assert!(message.contains("timers are disabled"), "{message}");
    // The permit it reserved is back: the next one is still a second after the first.
    let refused = support::block_on_without_tokio(
        RateLimit::builder("rate::no_driver_check")
            .rate(Rate::per_second(1))
            .build()
            .unwrap()
            .call(async { Ok::<_, Rejected>(()) }),
    );
    assert!(refused.is_ok());
    assert_eq!(limit.available(), 0);
    assert!(limit.max_wait().is_some());
}

#[tokio::test(start_paused = true)]
async fn extreme_settings_saturate() {
    let fast = limit(
        "rate::fast",
        Rate::new(u32::MAX, Duration::from_nanos(1)),
        u32::MAX,
    );
    for _ in 0..1000 {
        ok(&fast).await.unwrap();
    }
    let slow = RateLimit::builder("rate::slow")
        .rate(Rate::new(1, Duration::from_secs(u64::MAX)))
        .max_wait(Duration::MAX)
        .build()
        .unwrap();
    ok(&slow).await.unwrap();
    let mut waiting = Box::pin(ok(&slow));
    assert!(support::poll_once(waiting.as_mut()).await.is_pending());
    drop(waiting);
    assert_eq!(slow.available(), 0);
}

#[cfg(feature = "tower")]
mod layer {
    use super::*;
    use resiliency::tower::RateLimitLayer;
    use std::sync::atomic::AtomicU32;
    use tower::{service_fn, Layer, Service, ServiceExt};

    #[tokio::test(start_paused = true)]
    async fn a_refused_request_never_reaches_the_inner_service_and_a_waiting_one_runs_after_its_wait(
    ) {
        let called = Arc::new(AtomicU32::new(0));
        let seen = called.clone();
        let layer = RateLimitLayer::new(
            RateLimit::builder("rate::layer")
                .rate(Rate::per_second(10))
                .burst(1)
                .max_wait(ms(150)),
        )
        .unwrap();
        let mut svc = layer.layer(service_fn(move |n: u32| {
            seen.fetch_add(1, Ordering::Relaxed);
            async move { Ok::<_, std::io::Error>(n) }
        }));
        assert_eq!(svc.ready().await.unwrap().call(1).await.unwrap(), 1);
        let started = Instant::now();
        assert_eq!(svc.ready().await.unwrap().call(2).await.unwrap(), 2);
        assert_eq!(started.elapsed(), ms(100));
        let _third = svc.ready().await.unwrap().call(3); // waits 100 ms
        let refused = svc.ready().await.unwrap().call(4).await.unwrap_err();
        assert!(support::rejected(&refused).is_rate_limited());
        assert_eq!(support::rejected(&refused).retry_after(), Some(ms(200)));
        assert_eq!(
            called.load(Ordering::Relaxed),
            3,
            "the refused request was not passed on"
        );
        assert!(std::ptr::eq(
            layer.rate_limit(),
            rate_limit::get("rate::layer").unwrap()
        ));
    }
}

#[cfg(feature = "axum")]
#[tokio::test(start_paused = true)]
async fn a_refusal_is_a_429_with_retry_after_in_whole_seconds() {
    use axum::response::IntoResponse;
    let limit = limit("rate::http", Rate::new(1, ms(1500)), 1);
    ok(&limit).await.unwrap();
    let response = ok(&limit).await.unwrap_err().into_response();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    advance(ms(1400)).await;
    let response = ok(&limit).await.unwrap_err().into_response();
    assert_eq!(response.headers()["retry-after"], "1");
}
