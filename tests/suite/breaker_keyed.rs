//! Keyed breakers (`#[breaker(key = ...)]`): one breaker per key, the family from
//! `breaker::get_keyed`, keys of any `Display` type, idle eviction and the `max_keys` bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::RejectedKind;
use tokio::time::{sleep, Instant};

use crate::support;
use support::{ms, rejected, secs, BoxError};

fn family(name: &str) -> std::sync::Arc<resiliency::KeyedBreaker> {
    breaker::get_keyed(name).unwrap_or_else(|| panic!("keyed family `{name}` is not registered"))
}

#[resiliency::breaker(
    name = "keyed.hosts",
    key = host,
    error_threshold = 2,
    error_timeout = "30s"
)]
async fn fetch(host: &str, ok: bool) -> Result<String, BoxError> {
    if ok {
        Ok(format!("page from {host}"))
    } else {
        Err(format!("{host} is down").into())
    }
}

#[tokio::test(start_paused = true)]
async fn one_breaker_per_key() {
    const NAME: &str = "keyed.hosts";
    assert!(fetch("a.example", false).await.is_err());
    assert!(fetch("a.example", false).await.is_err());
    assert_eq!(
        fetch("b.example", true).await.unwrap(),
        "page from b.example"
    );
    assert!(fetch("b.example", false).await.is_err());
    assert_eq!(
        fetch("b.example", true).await.unwrap(),
        "page from b.example",
        "b is still closed"
    );

    let hosts = family(NAME);
    assert_eq!(hosts.name(), NAME);
    assert_eq!(hosts.len(), 2);
    assert!(!hosts.is_empty());
    let a = hosts.get(&"a.example").expect("key a");
    assert_eq!(a.state(), State::Open);
    assert_eq!(a.name(), NAME);
    assert_eq!(a.key(), Some("a.example"));
    let b = hosts.get("b.example").expect("key b");
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().recent_errors, 1);
    assert!(hosts.get("c.example").is_none(), "get does not create");
    assert_eq!(hosts.len(), 2);
    assert!(
        breaker::get(NAME).is_none(),
        "a keyed family is not a single breaker"
    );
    assert!(breaker::names().iter().any(|n| n == NAME));

    sleep(secs(10)).await;
    let refused = fetch("a.example", true).await.unwrap_err();
    let refused = rejected(&refused);
    assert_eq!(refused.kind(), RejectedKind::CircuitOpen);
    assert_eq!(refused.name(), NAME);
    assert_eq!(refused.key(), Some("a.example"));
    assert_eq!(refused.retry_after(), Some(secs(20)));
    assert_eq!(
        refused.to_string(),
        "circuit breaker `keyed.hosts` for key `a.example` is open; it half-opens in 20s"
    );

    sleep(secs(20)).await;
    assert_eq!(a.state(), State::HalfOpen);
    assert_eq!(
        fetch("a.example", true).await.unwrap(),
        "page from a.example"
    );
    assert_eq!(a.state(), State::Closed);
}

#[resiliency::breaker(
    name = "keyed.shards",
    key = shard,
    error_threshold = 1,
    error_timeout = "10s",
    timeout = "1s"
)]
async fn query(shard: u64, delay: Duration) -> Result<u64, BoxError> {
    sleep(delay).await;
    Ok(shard * 10)
}

#[tokio::test(start_paused = true)]
async fn a_u64_key() {
    const NAME: &str = "keyed.shards";
    let start = Instant::now();
    let timeout = query(7, secs(5)).await.unwrap_err();
    assert_eq!(start.elapsed(), secs(1));
    let timeout = rejected(&timeout);
    assert_eq!(timeout.kind(), RejectedKind::Timeout);
    assert_eq!(timeout.key(), Some("7"));
    assert_eq!(
        timeout.to_string(),
        "call through circuit breaker `keyed.shards` for key `7` timed out after 1s"
    );
    assert_eq!(query(8, ms(10)).await.unwrap(), 80, "shard 8 is unaffected");

    let shards = family(NAME);
    assert_eq!(shards.get(&7u64).unwrap().state(), State::Open);
    assert_eq!(shards.get(&8u64).unwrap().state(), State::Closed);
    assert_eq!(
        shards.get("7").unwrap().key(),
        Some("7"),
        "the key is the Display text"
    );
    assert_eq!(shards.len(), 2);

    let refused = query(7, Duration::ZERO).await.unwrap_err();
    let refused = rejected(&refused);
    assert_eq!(refused.key(), Some("7"));
    assert_eq!(
        refused.to_string(),
        "circuit breaker `keyed.shards` for key `7` is open; it half-opens in 9.99s"
    );
}

#[resiliency::breaker(name = "keyed.owned", key = host, error_threshold = 1, error_timeout = "10s")]
async fn owned(host: String, ok: bool) -> Result<String, BoxError> {
    if ok {
        Ok(format!("hello {host}"))
    } else {
        Err(format!("{host} failed").into())
    }
}

#[tokio::test(start_paused = true)]
async fn an_owned_string_key_that_the_body_also_uses() {
    const NAME: &str = "keyed.owned";
    assert_eq!(owned("x".to_string(), true).await.unwrap(), "hello x");
    assert_eq!(
        owned("y".to_string(), false).await.unwrap_err().to_string(),
        "y failed"
    );
    let refused = owned("y".to_string(), true).await.unwrap_err();
    assert_eq!(rejected(&refused).key(), Some("y"));
    assert_eq!(owned("x".to_string(), true).await.unwrap(), "hello x");
    let hosts = family(NAME);
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts.get(&String::from("y")).unwrap().state(), State::Open);
}

/// A key computed from the arguments, on a method with `&self`.
struct Client {
    region: &'static str,
}

struct Request {
    host: String,
    port: u16,
}

impl Client {
    #[resiliency::breaker(
        name = "keyed.expr",
        key = format_args!("{}:{}", req.host, req.port),
        error_threshold = 1,
        error_timeout = "10s"
    )]
    async fn send(&self, req: &Request, ok: bool) -> Result<String, BoxError> {
        if ok {
            Ok(format!("{} via {}", req.host, self.region))
        } else {
            Err("refused".into())
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_key_computed_from_the_arguments_on_a_method() {
    let client = Client { region: "eu" };
    let a = Request {
        host: "a".into(),
        port: 80,
    };
    let a_tls = Request {
        host: "a".into(),
        port: 443,
    };
    assert!(client.send(&a, false).await.is_err());
    assert_eq!(client.send(&a_tls, true).await.unwrap(), "a via eu");
    let refused = client.send(&a, true).await.unwrap_err();
    assert_eq!(rejected(&refused).key(), Some("a:80"));
    let family = family("keyed.expr");
    assert_eq!(family.get("a:80").unwrap().state(), State::Open);
    assert_eq!(family.get("a:443").unwrap().state(), State::Closed);
}

#[resiliency::breaker(
    name = "keyed.idle",
    key = host,
    error_threshold = 2,
    error_window = "1m",
    error_timeout = "1m",
    idle_timeout = "1s"
)]
async fn idle(host: &str, ok: bool) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err("down".into())
    }
}

#[tokio::test(start_paused = true)]
async fn idle_closed_keys_are_evicted_but_never_open_or_erroring_ones() {
    const NAME: &str = "keyed.idle";
    // Every key is created at t = 0 (no later insert, so no background sweep in this test).
    idle("a", true).await.unwrap();
    idle("b", true).await.unwrap();
    idle("c", false).await.unwrap_err();
    idle("c", false).await.unwrap_err(); // c opens
    idle("d", true).await.unwrap();
    idle("e", false).await.unwrap_err(); // e stays closed with a recent error
    let keys = family(NAME);
    assert_eq!(keys.len(), 5);
    assert_eq!(keys.get("c").unwrap().state(), State::Open);

    sleep(ms(2_500)).await; // beyond 2 x idle_timeout
    assert_eq!(
        keys.evict_idle(),
        0,
        "the first sweep only marks: every key was used before it"
    );
    idle("d", true).await.unwrap(); // d is used between the sweeps
    assert_eq!(
        keys.evict_idle(),
        2,
        "a and b were unused since the previous sweep"
    );
    assert_eq!(keys.len(), 3);
    assert!(keys.get("a").is_none());
    assert!(keys.get("b").is_none());
    assert!(keys.get("d").is_some(), "used since the previous sweep");
    assert_eq!(
        keys.get("c").unwrap().state(),
        State::Open,
        "an open key is never evicted"
    );
    assert_eq!(keys.get("e").unwrap().snapshot().recent_errors, 1);

    sleep(secs(30)).await;
    assert_eq!(keys.evict_idle(), 1, "d is idle now");
    assert!(keys.get("d").is_none());
    assert_eq!(keys.evict_idle(), 0);
    let mut left: Vec<String> = keys.breakers().iter().map(|(k, _)| k.to_string()).collect();
    left.sort();
    assert_eq!(
        left,
        ["c", "e"],
        "open, and closed with an error in the window"
    );
    assert_eq!(keys.get("c").unwrap().state(), State::Open);
    let refused = idle("c", true).await.unwrap_err();
    assert_eq!(rejected(&refused).key(), Some("c"), "c kept its state");
}

#[resiliency::breaker(
    name = "keyed.max",
    key = host,
    error_threshold = 1,
    error_timeout = "1m",
    max_keys = 3
)]
async fn bounded(host: &str, ok: bool, ran: &AtomicUsize) -> Result<String, BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    if ok {
        Ok(host.to_uppercase())
    } else {
        Err("down".into())
    }
}

#[tokio::test(start_paused = true)]
async fn max_keys_a_new_key_works_with_a_fresh_unremembered_breaker_when_full() {
    const NAME: &str = "keyed.max";
    let ran = AtomicUsize::new(0);
    for host in ["a", "b", "c"] {
        assert!(bounded(host, false, &ran).await.is_err());
    }
    let keys = family(NAME);
    assert_eq!(keys.len(), 3);
    for host in ["a", "b", "c"] {
        assert_eq!(keys.get(host).unwrap().state(), State::Open);
    }

    assert_eq!(
        bounded("d", true, &ran).await.unwrap(),
        "D",
        "a 4th key still works"
    );
    assert_eq!(keys.len(), 3);
    assert!(keys.get("d").is_none(), "not remembered");
    assert!(bounded("d", false, &ran).await.is_err());
    assert_eq!(
        bounded("d", true, &ran).await.unwrap(),
        "D",
        "each call gets a fresh breaker: d's error opened nothing that is kept"
    );
    assert_eq!(keys.len(), 3);
    assert!(rejected(&bounded("a", true, &ran).await.unwrap_err()).is_circuit_open());
    assert_eq!(ran.load(Ordering::SeqCst), 6);
}

#[resiliency::breaker(
    name = "keyed.max_idle",
    key = host,
    error_threshold = 1,
    idle_timeout = "1s",
    max_keys = 3
)]
async fn full_of_idle(host: &str) -> Result<(), BoxError> {
    let _ = host;
    Ok(())
}

/// `max_keys`: "When full, idle keys are evicted first" (BreakerBuilder::max_keys).
#[tokio::test(start_paused = true)]
async fn max_keys_when_full_keys_idle_for_long_make_room_for_a_new_key() {
    const NAME: &str = "keyed.max_idle";
    for host in ["a", "b", "c"] {
        full_of_idle(host).await.unwrap();
    }
    let keys = family(NAME);
    assert_eq!(keys.len(), 3);
    sleep(secs(60)).await; // a, b and c: closed, no errors, unused for 60 x idle_timeout
    full_of_idle("d").await.unwrap();
    assert!(keys.get("d").is_some(), "d took the place of idle keys");
    assert!(keys.len() <= 3);
}

type BoxResult = Result<(), BoxError>;

async fn fail(family: &resiliency::KeyedBreaker, key: &str) -> BoxResult {
    family
        .breaker(key)
        .call(async { Err::<(), BoxError>("down".into()) })
        .await
}

async fn succeed(family: &resiliency::KeyedBreaker, key: &str) -> BoxResult {
    family
        .breaker(key)
        .call(async { Ok::<(), BoxError>(()) })
        .await
}

/// A key whose breaker opened and is never called again holds nothing once its open time has
/// passed: it makes room for a new key, whose breaker is kept (its errors count, it opens).
#[tokio::test(start_paused = true)]
async fn dead_open_keys_make_room_for_new_keys_once_their_open_time_has_passed() {
    let hosts = resiliency::Breaker::builder("keyed.dead_hosts")
        .error_threshold(1)
        .error_timeout(secs(10))
        .max_keys(4)
        .build_keyed()
        .unwrap();
    for round in 0..10 {
        for i in 0..4 {
            let host = format!("host-{round}-{i}");
            fail(&hosts, &host).await.unwrap_err();
            assert!(
                hosts.get(&host).is_some(),
                "round {round}: {host} was given a breaker that is not kept"
            );
            let refused = succeed(&hosts, &host).await.unwrap_err();
            assert!(
                rejected(&refused).is_circuit_open(),
                "round {round}: the dead {host} is refused"
            );
        }
        assert!(hosts.len() <= 4);
        sleep(secs(11)).await; // every open time passes; no host is called again
    }
}

/// An open key never called again is evicted like an idle one once its open time has passed,
/// but never before.
#[tokio::test(start_paused = true)]
async fn an_open_key_unused_past_its_open_time_is_evicted_like_an_idle_one() {
    let hosts = resiliency::Breaker::builder("keyed.dead_idle")
        .error_threshold(1)
        .error_timeout(secs(60))
        .idle_timeout(secs(1))
        .build_keyed()
        .unwrap();
    for i in 0..100 {
        fail(&hosts, &format!("dead-{i}")).await.unwrap_err();
    }
    assert_eq!(hosts.len(), 100);
    sleep(secs(30)).await;
    hosts.evict_idle();
    assert_eq!(hosts.evict_idle(), 0, "still open: never evicted");
    assert_eq!(hosts.len(), 100);
    sleep(secs(3600)).await;
    hosts.evict_idle();
    hosts.evict_idle();
    assert_eq!(hosts.len(), 0, "dead for an hour: nothing left to keep");
}

/// When the family is full, the longest-unused keys go first, not every idle one.
#[tokio::test(start_paused = true)]
async fn a_full_family_evicts_its_longest_unused_keys_first() {
    let hosts = resiliency::Breaker::builder("keyed.lru")
        .idle_timeout(secs(8))
        .max_keys(4)
        .build_keyed()
        .unwrap();
    for host in ["a", "b", "c"] {
        succeed(&hosts, host).await.unwrap();
    }
    sleep(secs(5)).await;
    succeed(&hosts, "d").await.unwrap();
    succeed(&hosts, "b").await.unwrap();
    succeed(&hosts, "c").await.unwrap();
    assert_eq!(hosts.len(), 4);
    succeed(&hosts, "e").await.unwrap();
    let mut held: Vec<String> = hosts
        .breakers()
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    held.sort();
    assert_eq!(held, ["b", "c", "d", "e"], "a was unused the longest");
}

/// A full family of idle keys makes room for every new key that needs it, and says it is full
/// (with nothing to evict) at most once in a while, not on every call.
#[tokio::test(start_paused = true)]
async fn a_full_family_of_idle_keys_makes_room_for_every_new_key() {
    let hosts = resiliency::Breaker::builder("keyed.full_idle")
        .error_threshold(2)
        .max_keys(2)
        .build_keyed()
        .unwrap();
    for i in 0..20 {
        let host = format!("idle-{i}");
        succeed(&hosts, &host).await.unwrap();
        assert!(hosts.get(&host).is_some(), "{host} is kept");
        assert!(hosts.len() <= 2);
    }
    // A new dead host is refused once it failed enough, whatever came before it.
    fail(&hosts, "dead").await.unwrap_err();
    fail(&hosts, "dead").await.unwrap_err();
    assert!(rejected(&succeed(&hosts, "dead").await.unwrap_err()).is_circuit_open());
}

#[tokio::test(start_paused = true)]
async fn a_full_family_with_nothing_to_evict_warns_once_in_a_while() {
    let captured = support::Captured::default();
    let _default = tracing::subscriber::set_default(captured.subscriber());
    let hosts = resiliency::Breaker::builder("keyed.full_warn")
        .max_keys(2)
        .build_keyed()
        .unwrap();
    hosts.breaker("a").force_open();
    hosts.breaker("b").force_open();
    for i in 0..100 {
        succeed(&hosts, &format!("new-{i}")).await.unwrap();
    }
    assert_eq!(hosts.len(), 2);
    let text = captured.text();
    assert_eq!(text.matches("is full").count(), 1, "{text}");
}

/// A lookup never gets a breaker that the family no longer holds, however it races a sweep.
#[test]
fn a_lookup_racing_eviction_gets_the_breaker_the_family_holds() {
    let hosts = std::sync::Arc::new(
        resiliency::Breaker::builder("keyed.race_evict")
            .build_keyed()
            .unwrap(),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sweeper = {
        let (hosts, stop) = (hosts.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                hosts.evict_idle();
            }
        })
    };
    let start = std::time::Instant::now();
    let mut lost = None;
    let mut round = 0u64;
    while start.elapsed() < Duration::from_millis(1500) && lost.is_none() {
        round += 1;
        for key in 0..8u32 {
            let got = hosts.breaker(&key);
            match hosts.get(&key) {
                Some(held) if std::sync::Arc::ptr_eq(&held, &got) => {}
                _ => lost = Some((round, key)),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    sweeper.join().unwrap();
    assert_eq!(lost, None, "a lookup got an evicted breaker (round, key)");
}

/// Concurrent inserts never take the family past `max_keys`.
#[test]
fn concurrent_inserts_never_exceed_max_keys() {
    let start = std::time::Instant::now();
    let mut rounds = 0;
    while start.elapsed() < Duration::from_millis(1500) {
        rounds += 1;
        let hosts = std::sync::Arc::new(
            resiliency::Breaker::builder("keyed.race_insert")
                .max_keys(16)
                .build_keyed()
                .unwrap(),
        );
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (hosts, barrier) = (hosts.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    // Held, so not evictable: a full family has no room to make.
                    (0..8)
                        .map(|i| hosts.breaker(&format!("{t}-{i}")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let held: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(
            hosts.len() <= 16,
            "round {rounds}: {} keys under max_keys = 16",
            hosts.len()
        );
        drop(held);
    }
}

/// A full family that keeps taking new keys (each evicting old ones to make room) stays as fast
/// as it started: 16 times its `max_keys` in new keys, each key's insert well under a millisecond
/// on average. (Evicted keys leave tombstones in the family's table; without fresh copies of
/// the table, inserts came to probe all of it and a churning family stopped.)
#[test]
fn a_full_family_taking_new_keys_for_ever_stays_fast() {
    let family = resiliency::Breaker::builder("keyed::churn")
        .max_keys(4096)
        .register_keyed()
        .unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        for key in 0..16 * 4096 {
            family.breaker(&format!("k{key}"));
        }
        assert_eq!(family.len(), 4096);
        let _ = done.send(started.elapsed());
    });
    let took = finished
        .recv_timeout(Duration::from_secs(30))
        .expect("16 x 4096 new keys in a full family within 30 s");
    let per_key = took / (16 * 4096);
    assert!(per_key < Duration::from_millis(1), "{per_key:?} per key");
}

/// What a family was asked, for the model below.
#[derive(Clone, Debug)]
enum KeyOp {
    /// `breaker(key)`; the breaker is kept (as a call in flight holds it) when `hold`.
    Lookup { key: usize, hold: bool },
    /// `get(key)`.
    Get { key: usize },
    /// Drops the breakers held for `key`.
    Release { key: usize },
    /// `evict_idle()` twice, with no lookup in between: every key not held goes.
    EvictIdle,
}

fn key_op(keys: usize) -> impl proptest::strategy::Strategy<Value = KeyOp> {
    use proptest::prelude::*;
    prop_oneof![
        6 => (0..keys, any::<bool>()).prop_map(|(key, hold)| KeyOp::Lookup { key, hold }),
        2 => (0..keys).prop_map(|key| KeyOp::Get { key }),
        2 => (0..keys).prop_map(|key| KeyOp::Release { key }),
        1 => Just(KeyOp::EvictIdle),
    ]
}

/// Keys of any bytes, around the length a breaker keeps in place and far past it, under any
/// mix of lookups, holds and evictions, in a family small enough to fill: no panic, a key's
/// breaker names it, a key keeps one breaker until it is evicted, a held breaker is never evicted
/// (its key's lookups keep getting it), and the family holds at most `max_keys` keys, each once.
#[test]
fn keyed_lookups_and_evictions_follow_the_model_for_any_keys() {
    use std::collections::HashMap;
    use std::sync::{Arc, Weak};

    // Same breaker: `kept` holds `Weak`s, which leave the strong count (that eviction reads)
    // alone and keep the address from being reused.
    let same = |a: &Arc<resiliency::Breaker>, b: &Weak<resiliency::Breaker>| {
        std::ptr::eq(Arc::as_ptr(a), b.as_ptr())
    };

    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    const MAX_KEYS: usize = 6;
    let key = prop_oneof![
        "\\PC{0,30}",
        any::<String>(),
        "[a-z.-]{20,24}",
        prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
    ];
    let case = prop::collection::vec(key, 1..12).prop_flat_map(|keys| {
        let n = keys.len();
        (Just(keys), prop::collection::vec(key_op(n), 1..80))
    });
    let mut runner = TestRunner::new(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case, |(keys, ops)| {
            let family = resiliency::Breaker::builder("keyed.model")
                .max_keys(MAX_KEYS)
                .build_keyed()
                .unwrap();
            // The breaker the family holds for a key, as last seen, and the ones held by "calls".
            let mut kept: HashMap<&str, Weak<resiliency::Breaker>> = HashMap::new();
            let mut held: HashMap<&str, Vec<Arc<resiliency::Breaker>>> = HashMap::new();
            for op in &ops {
                match *op {
                    KeyOp::Lookup { key, hold } => {
                        let key = keys[key].as_str();
                        let got = family.breaker(key);
                        prop_assert_eq!(got.key(), Some(key));
                        if let Some(before) = kept.get(key) {
                            prop_assert!(same(&got, before), "{:?} changed breaker", key);
                        }
                        // Kept, unless the family was full with nothing to evict.
                        if family.get(key).is_some_and(|b| Arc::ptr_eq(&b, &got)) {
                            kept.insert(key, Arc::downgrade(&got));
                        }
                        if hold {
                            held.entry(key).or_default().push(got);
                        }
                    }
                    KeyOp::Get { key } => {
                        let key = keys[key].as_str();
                        let got = family.get(key);
                        prop_assert_eq!(got.is_some(), kept.contains_key(key), "{:?}", key);
                        if let (Some(got), Some(before)) = (got, kept.get(key)) {
                            prop_assert!(same(&got, before), "{:?}", key);
                        }
                    }
                    KeyOp::Release { key } => {
                        held.remove(keys[key].as_str());
                    }
                    KeyOp::EvictIdle => {
                        family.evict_idle();
                        family.evict_idle();
                        for (key, breaker) in &kept {
                            let in_call = held
                                .get(key)
                                .is_some_and(|calls| calls.iter().any(|call| same(call, breaker)));
                            prop_assert_eq!(family.get(*key).is_some(), in_call, "{:?}", key);
                        }
                    }
                }
                // A key may go when room is made for another, or by `evict_idle`; never while a
                // call holds its breaker.
                let mut lost_in_call = None;
                kept.retain(|key, breaker| {
                    let still = family.get(*key).is_some_and(|b| same(&b, breaker));
                    let in_call = held
                        .get(key)
                        .is_some_and(|calls| calls.iter().any(|call| same(call, breaker)));
                    if !still && in_call {
                        lost_in_call = Some(key.to_string());
                    }
                    still
                });
                prop_assert_eq!(lost_in_call, None, "a breaker held by a call was evicted");
                prop_assert!(family.len() <= MAX_KEYS, "{} keys", family.len());
                prop_assert_eq!(family.len(), kept.len());
                let all = family.breakers();
                prop_assert_eq!(all.len(), kept.len());
                for (key, breaker) in &all {
                    prop_assert_eq!(breaker.key(), Some(&**key));
                    prop_assert!(
                        kept.get(&**key).is_some_and(|b| same(breaker, b)),
                        "{:?} held but not in the model",
                        key
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Lookups of held keys racing inserts that copy the table again and again (a small family
/// taking new keys for ever, evicting to make room) and sweeps: a held key's lookups always get
/// its breaker, and the family stays within `max_keys`.
#[test]
fn lookups_racing_table_copies_keep_each_held_key_on_its_breaker() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    const MAX_KEYS: usize = 64;
    let family = Arc::new(
        resiliency::Breaker::builder("keyed.race_copy")
            .max_keys(MAX_KEYS)
            .build_keyed()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (family, stop) = (family.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                drop(family.breaker(&format_args!("churn-{n}")));
                if n.is_multiple_of(256) {
                    family.evict_idle();
                }
                assert!(family.len() <= MAX_KEYS, "{} keys", family.len());
            }
            n
        })
    };
    let held: Vec<_> = (0..8)
        .map(|i| {
            let key = format!("held-{i}-{}", "x".repeat(i * 4));
            let breaker = family.breaker(key.as_str());
            (key, breaker)
        })
        .collect();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        for (key, breaker) in &held {
            let got = family.breaker(key.as_str());
            assert!(Arc::ptr_eq(&got, breaker), "{key} got another breaker");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let inserted = churn.join().unwrap();
    assert!(inserted > 1000, "only {inserted} churned keys");
    for (key, breaker) in &held {
        assert!(family
            .get(key.as_str())
            .is_some_and(|b| Arc::ptr_eq(&b, breaker)));
    }
}
