//! `#[breaker]` and `#[too_busy]` on blocking fns, called from threads (no task, and mostly no
//! tokio runtime): the breaker's state machine, panics, `&self`, generics, references and owned
//! arguments, `return` and `?` in the body, one breaker shared with an async fn by name, the
//! `max_in_flight` slots, run-time settings.

use crate::support;

use std::sync::{Arc, Barrier};
use std::thread;

use resiliency::breaker::State;
use resiliency::{breaker, too_busy, Rejected};
use support::{ms, rejected, BoxError};

#[breaker(name = "blocking::opens", error_threshold = 3, error_timeout = "50ms")]
fn query(ok: bool) -> Result<u32, BoxError> {
    if ok {
        Ok(1)
    } else {
        Err("db down".into())
    }
}

#[test]
fn a_blocking_breaker_opens_refuses_and_half_opens_without_a_runtime() {
    assert!(tokio::runtime::Handle::try_current().is_err());
    for _ in 0..3 {
        assert_eq!(query(false).unwrap_err().to_string(), "db down");
    }
    let b = resiliency::breaker::get("blocking::opens").unwrap();
    assert_eq!(b.state(), State::Open);
    // Refused while open, from any thread, without running the body.
    let refused = thread::spawn(|| query(true)).join().unwrap().unwrap_err();
    assert!(rejected(&refused).is_circuit_open());
    thread::sleep(ms(60));
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(query(true).unwrap(), 1);
    assert_eq!(b.state(), State::Closed);
}

#[breaker(name = "blocking::paused", error_threshold = 1, error_timeout = "30s")]
fn paused(ok: bool) -> Result<u32, BoxError> {
    if ok {
        Ok(2)
    } else {
        Err("down".into())
    }
}

#[tokio::test(start_paused = true)]
async fn blocking_calls_read_a_paused_clock_on_the_runtime_and_in_spawn_blocking() {
    paused(false).unwrap_err();
    let b = resiliency::breaker::get("blocking::paused").unwrap();
    assert_eq!(b.state(), State::Open);
    tokio::time::advance(support::secs(29)).await;
    let refused = tokio::task::spawn_blocking(|| paused(true))
        .await
        .unwrap()
        .unwrap_err();
    assert!(rejected(&refused).is_circuit_open());
    tokio::time::advance(support::secs(1)).await;
    assert_eq!(
        tokio::task::spawn_blocking(|| paused(true))
            .await
            .unwrap()
            .unwrap(),
        2
    );
    assert_eq!(b.state(), State::Closed);
}

#[breaker(name = "blocking::panics", error_threshold = 1, error_timeout = "50ms")]
fn panics(panic: bool) -> Result<u32, BoxError> {
    if panic {
        panic!("the driver panicked");
    }
    Ok(3)
}

#[test]
fn a_panicking_body_counts_as_an_error_and_a_panicking_probe_reopens() {
    assert_eq!(panics(false).unwrap(), 3);
    let b = resiliency::breaker::get("blocking::panics").unwrap();
    assert!(thread::spawn(|| panics(true)).join().is_err());
    assert_eq!(b.state(), State::Open);
    thread::sleep(ms(60));
    assert_eq!(b.state(), State::HalfOpen);
    // The probe panics: the breaker re-opens, and the probe's slot comes back.
    assert!(thread::spawn(|| panics(true)).join().is_err());
    assert_eq!(b.state(), State::Open);
    thread::sleep(ms(60));
    assert_eq!(panics(false).unwrap(), 3);
    assert_eq!(b.state(), State::Closed);
}

/// A client whose methods are blocking.
struct Client {
    prefix: String,
}

impl Client {
    #[breaker(name = "blocking::method", error_threshold = 2, error_timeout = "30s")]
    fn lookup(&self, key: &str) -> Result<&str, BoxError> {
        if key.is_empty() {
            return Err("empty key".into());
        }
        Ok(&self.prefix)
    }

    #[breaker(name = "blocking::owned", error_threshold = 5)]
    fn consume(self, mut parts: Vec<String>) -> Result<String, BoxError> {
        parts.push(self.prefix);
        Ok(parts.concat())
    }
}

#[test]
fn methods_with_self_references_and_owned_arguments() {
    let client = Client {
        prefix: "pre".into(),
    };
    assert_eq!(client.lookup("k").unwrap(), "pre");
    assert_eq!(client.lookup("").unwrap_err().to_string(), "empty key");
    assert_eq!(
        client.consume(vec!["a".into(), "b".into()]).unwrap(),
        "abpre"
    );
}

#[breaker(name = "blocking::generic", error_threshold = 5)]
fn parse_all<T: std::str::FromStr>(items: &[&str]) -> Result<Vec<T>, BoxError>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let mut out = Vec::new();
    for item in items {
        // `?` leaves the body as it left the fn.
        out.push(item.parse::<T>()?);
    }
    Ok(out)
}

#[test]
fn generics_and_the_question_mark() {
    assert_eq!(parse_all::<u8>(&["1", "2"]).unwrap(), vec![1, 2]);
    assert!(parse_all::<u8>(&["1", "x"]).is_err());
    assert_eq!(
        resiliency::breaker::get("blocking::generic")
            .unwrap()
            .snapshot()
            .recent_errors,
        1
    );
}

#[derive(Debug)]
enum DbError {
    Missing,
    Down,
    Refused(Rejected),
}

impl From<Rejected> for DbError {
    fn from(rejected: Rejected) -> Self {
        DbError::Refused(rejected)
    }
}

fn is_down(error: &DbError) -> bool {
    matches!(error, DbError::Down)
}

#[breaker(name = "blocking::count_if", error_threshold = 1, count_if = is_down)]
fn row(id: u32) -> Result<u32, DbError> {
    match id {
        0 => Err(DbError::Missing),
        1 => Err(DbError::Down),
        _ => Ok(id),
    }
}

#[test]
fn count_if_on_a_blocking_fn() {
    assert!(matches!(row(0), Err(DbError::Missing)));
    assert_eq!(row(5).unwrap(), 5);
    assert!(matches!(row(1), Err(DbError::Down)));
    assert!(matches!(row(5), Err(DbError::Refused(r)) if r.is_circuit_open()));
}

#[breaker(name = "blocking::shared", error_threshold = 2, error_timeout = "30s")]
fn shared_blocking() -> Result<(), BoxError> {
    Err("blocking failed".into())
}

#[breaker(name = "blocking::shared", error_threshold = 2, error_timeout = "30s")]
async fn shared_async() -> Result<u32, BoxError> {
    Ok(4)
}

#[tokio::test]
async fn a_blocking_fn_and_an_async_fn_share_one_breaker_by_name() {
    tokio::task::spawn_blocking(|| {
        shared_blocking().unwrap_err();
        shared_blocking().unwrap_err();
    })
    .await
    .unwrap();
    let refused = shared_async().await.unwrap_err();
    assert!(rejected(&refused).is_circuit_open());
    assert_eq!(
        resiliency::breaker::get("blocking::shared")
            .unwrap()
            .state(),
        State::Open
    );
}

#[breaker(
    name = "blocking::settings",
    error_threshold = 5,
    error_timeout = "30s"
)]
fn configured() -> Result<(), BoxError> {
    Err("failed".into())
}

#[test]
fn run_time_settings_reach_a_blocking_site() {
    resiliency::settings::set(
        resiliency::settings::Policy::Breaker,
        "blocking::settings",
        "error_threshold",
        1,
    )
    .unwrap();
    configured().unwrap_err();
    assert_eq!(
        resiliency::breaker::get("blocking::settings")
            .unwrap()
            .state(),
        State::Open
    );
    assert!(rejected(&configured().unwrap_err()).is_circuit_open());
}

#[too_busy(max_in_flight = 2)]
fn render(start: &Barrier, finish: &Barrier) -> Result<u32, BoxError> {
    start.wait();
    finish.wait();
    Ok(5)
}

#[test]
fn max_in_flight_admits_two_of_four_threads_and_refuses_two_at_once() {
    // Two threads hold both slots (each waits for the others inside the body) while two more
    // call: those are refused without waiting.
    let start = Arc::new(Barrier::new(3));
    let finish = Arc::new(Barrier::new(3));
    let holders: Vec<_> = (0..2)
        .map(|_| {
            let (start, finish) = (start.clone(), finish.clone());
            thread::spawn(move || render(&start, &finish))
        })
        .collect();
    start.wait();
    let refused: Vec<_> = (0..2)
        .map(|_| {
            let (start, finish) = (start.clone(), finish.clone());
            thread::spawn(move || render(&start, &finish))
        })
        .map(|t| t.join().unwrap())
        .collect();
    for refusal in &refused {
        let error = refusal.as_ref().unwrap_err();
        assert!(rejected(error).is_too_busy(), "{error}");
    }
    finish.wait();
    for holder in holders {
        assert_eq!(holder.join().unwrap().unwrap(), 5);
    }
}

#[too_busy(max_in_flight = 1)]
fn export(panic: bool) -> Result<u32, BoxError> {
    if panic {
        panic!("export failed");
    }
    Ok(6)
}

#[test]
fn a_panicking_blocking_body_gives_its_slot_back() {
    assert!(thread::spawn(|| export(true)).join().is_err());
    // The one slot came back: the next call is admitted.
    assert_eq!(export(false).unwrap(), 6);
    assert_eq!(export(false).unwrap(), 6);
}

#[too_busy(max_latency = "1ms")]
fn slow() -> Result<(), BoxError> {
    thread::sleep(ms(5));
    Ok(())
}

#[test]
fn max_latency_sheds_a_slow_blocking_fn() {
    slow().unwrap();
    assert!(rejected(&slow().unwrap_err()).is_too_busy());
}

#[breaker(name = "blocking::timeout_setting", error_threshold = 1)]
fn unbounded() -> Result<u32, BoxError> {
    thread::sleep(ms(20));
    Ok(7)
}

#[test]
fn a_timeout_from_the_settings_does_not_bound_a_blocking_call() {
    resiliency::settings::set(
        resiliency::settings::Policy::Breaker,
        "blocking::timeout_setting",
        "timeout",
        "1ms",
    )
    .unwrap();
    assert_eq!(unbounded().unwrap(), 7);
    let b = resiliency::breaker::get("blocking::timeout_setting").unwrap();
    assert_eq!(b.timeout(), Some(ms(1)));
    assert_eq!(b.state(), State::Closed);
}

#[breaker(name = "blocking::impl_trait", error_threshold = 5)]
fn shown(n: &str) -> Result<impl std::fmt::Display, BoxError> {
    let n: u32 = n.parse()?;
    Ok(n + 1)
}

#[test]
fn a_return_type_with_impl_trait() {
    assert_eq!(shown("1").unwrap().to_string(), "2");
    assert!(shown("x").is_err());
}

#[too_busy(max_in_flight = "auto", auto_min = 1, auto_initial = 2)]
fn render_auto(inside: &Barrier, done: &Barrier, panic: bool) -> Result<u32, Rejected> {
    inside.wait();
    done.wait();
    assert!(!panic, "expected: a blocking body that panics");
    Ok(1)
}

/// `max_in_flight = "auto"` on a blocking fn: the learned limit (2 to start) refuses a third call
/// at once, a panicking body gives its slot back, and no runtime is needed.
#[test]
fn a_blocking_fn_with_a_learned_limit_refuses_beyond_it_and_gets_slots_back() {
    let (inside, done) = (Barrier::new(3), Barrier::new(3));
    thread::scope(|s| {
        let first = s.spawn(|| render_auto(&inside, &done, false));
        let second = s.spawn(|| render_auto(&inside, &done, true));
        inside.wait(); // both hold a slot
        let third = render_auto(&Barrier::new(1), &Barrier::new(1), false);
        assert!(third.unwrap_err().is_too_busy());
        done.wait();
        assert_eq!(first.join().unwrap().unwrap(), 1);
        assert!(second.join().is_err(), "the second body panicked");
    });
    let one = Barrier::new(1);
    assert_eq!(render_auto(&one, &one, false).unwrap(), 1);
    let (_, name) = resiliency::settings::sites()
        .into_iter()
        .find(|(_, name)| name.ends_with("::render_auto"))
        .unwrap();
    let guard = resiliency::too_busy::get(&name).unwrap();
    assert!(guard.learns_in_flight_limit());
    assert_eq!(guard.in_flight(), 0);
}
