//! `name = "..."` on `#[too_busy]` and `#[race_retry]`, as on `#[breaker]`: the site is known by
//! that name to the run-time settings (`set`, `effective`, the environment), `sites()`, the
//! registries (`too_busy::get`, `race_retry::get`, `race_retry::stats`) and refusals, and sites of one name share
//! one policy, the first set up giving its options.
//!
//! The settings' layers and the environment are process-wide, so every test here runs alone
//! (`serial`) and leaves them empty.
#![allow(clippy::await_holding_lock)]

use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};

use resiliency::settings::{self, Overrides, Policy, Source, Value};
use resiliency::{race_retry, too_busy, Rejected};
use tokio::sync::oneshot;
use tokio::time::Instant;

mod support;
use support::{ms, poll_once, secs, serial};

/// Leaves the file, environment and code layers as they were before a test.
fn clean() {
    settings::load("none", &Overrides::new()).unwrap();
    for (key, _) in std::env::vars() {
        if key.starts_with("RESILIENCY_") && key != "RESILIENCY_DISABLED" {
            std::env::remove_var(key);
        }
    }
    settings::load_env().unwrap();
}

fn effective(policy: Policy, site: &str, setting: &str) -> (Option<Value>, Source) {
    let found = settings::effective(policy, site)
        .unwrap_or_else(|| panic!("no live site {site} in {:?}", settings::sites()))
        .into_iter()
        .find(|e| e.setting == setting)
        .unwrap();
    (found.value, found.source)
}

// ---------------------------------------------------------------------------------------------
// #[too_busy(name = "...")]

#[too_busy(name = "names.checkout", max_in_flight = 1)]
async fn checkout(hold: Option<oneshot::Receiver<()>>) -> Result<(), Rejected> {
    if let Some(hold) = hold {
        let _ = hold.await;
    }
    Ok(())
}

/// Calls `checkout` `n` times at once, each held; polls each once and returns how many were
/// refused, then lets them all finish.
async fn refused_of_checkouts(n: usize) -> usize {
    let mut releases = Vec::new();
    let mut running = Vec::new();
    let mut refused = 0;
    for _ in 0..n {
        let (release, hold) = oneshot::channel();
        let mut call = Box::pin(checkout(Some(hold)));
        match poll_once(call.as_mut()).await {
            std::task::Poll::Ready(Err(rejected)) => {
                assert!(rejected.is_too_busy(), "{rejected}");
                assert_eq!(rejected.name(), "names.checkout");
                refused += 1;
            }
            std::task::Poll::Ready(Ok(())) => panic!("a held call finished"),
            std::task::Poll::Pending => {
                releases.push(release);
                running.push(call);
            }
        }
    }
    drop(releases);
    for call in running {
        call.await.unwrap();
    }
    refused
}

/// The site is called by its name, not by the fn's path: in `sites()`, `effective`, `too_busy::get`,
/// a refusal's name; `set` by that name reaches the live guard.
#[tokio::test(start_paused = true)]
async fn a_named_too_busy_site_is_set_by_its_name() {
    let _serial = serial();
    checkout(None).await.unwrap();
    let sites = settings::sites();
    assert!(
        sites.contains(&(Policy::TooBusy, "names.checkout".to_owned())),
        "{sites:?}"
    );
    assert!(
        !sites.iter().any(|(_, name)| name.ends_with("::checkout")),
        "{sites:?}"
    );
    assert_eq!(
        effective(Policy::TooBusy, "names.checkout", "max_in_flight"),
        (Some(Value::Int(1)), Source::Attribute)
    );
    assert_eq!(
        too_busy::get("names.checkout").unwrap().in_flight_limit(),
        Some(1)
    );
    assert_eq!(refused_of_checkouts(3).await, 2);

    settings::set(Policy::TooBusy, "names.checkout", "max_in_flight", 2).unwrap();
    assert_eq!(
        effective(Policy::TooBusy, "names.checkout", "max_in_flight"),
        (Some(Value::Int(2)), Source::Code)
    );
    assert_eq!(refused_of_checkouts(3).await, 1);
    settings::unset(Policy::TooBusy, "names.checkout", "max_in_flight").unwrap();
    assert_eq!(refused_of_checkouts(3).await, 2);
}

/// `RESILIENCY_TOO_BUSY__<NAME>__<SETTING>`, the name spelt as the settings docs say.
#[tokio::test(start_paused = true)]
async fn a_named_too_busy_site_takes_its_environment_variable() {
    let _serial = serial();
    checkout(None).await.unwrap();
    let variable = "RESILIENCY_TOO_BUSY__NAMES_CHECKOUT__MAX_IN_FLIGHT";
    std::env::set_var(variable, "3");
    settings::load_env().unwrap();
    assert_eq!(
        effective(Policy::TooBusy, "names.checkout", "max_in_flight"),
        (
            Some(Value::Text("3".into())),
            Source::Environment {
                variable: variable.into()
            }
        )
    );
    assert_eq!(refused_of_checkouts(4).await, 1);
    clean();
    assert_eq!(refused_of_checkouts(3).await, 2);
}

#[too_busy(name = "names.shared_guard", max_in_flight = 1)]
async fn shared_guard_a(hold: oneshot::Receiver<()>) -> Result<(), Rejected> {
    let _ = hold.await;
    Ok(())
}

#[too_busy(name = "names.shared_guard", max_in_flight = 5)]
async fn shared_guard_b() -> Result<(), Rejected> {
    Ok(())
}

/// Two `#[too_busy]` fns of one name share one guard, as two `#[breaker]` fns of one name share
/// one breaker: the first set up gives the options, and one slot is for both.
#[tokio::test(start_paused = true)]
async fn too_busy_sites_of_one_name_share_one_guard() {
    let _serial = serial();
    let (release, hold) = oneshot::channel();
    let mut a = pin!(shared_guard_a(hold));
    assert!(poll_once(a.as_mut()).await.is_pending());
    let refused = shared_guard_b().await.unwrap_err();
    assert!(refused.is_too_busy(), "{refused}");
    assert_eq!(refused.name(), "names.shared_guard");
    release.send(()).unwrap();
    a.await.unwrap();
    shared_guard_b().await.unwrap();
    let of_name = settings::sites()
        .into_iter()
        .filter(|site| *site == (Policy::TooBusy, "names.shared_guard".to_owned()))
        .count();
    assert_eq!(of_name, 1, "one site, one set of settings");
}

// ---------------------------------------------------------------------------------------------
// #[race_retry(name = "...")]

#[race_retry(name = "names.search", retries = 2, after = "100ms", total = "1s")]
async fn search(attempts: &AtomicU32) -> Result<u32, Rejected> {
    let n = attempts.fetch_add(1, Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(n)
}

/// Runs `search` once to its deadline: how long it took and how many attempts it made.
async fn search_to_deadline() -> (std::time::Duration, u32) {
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let refused = search(&attempts).await.unwrap_err();
    assert!(refused.is_deadline(), "{refused}");
    assert_eq!(refused.name(), "names.search");
    (start.elapsed(), attempts.load(Ordering::SeqCst))
}

/// The raced fn is called by its name: in `sites()`, `effective`, `race_retry::get`, `race_retry::stats`, a
/// refusal's name; `set` by that name reaches the live policy on its next call.
#[tokio::test(start_paused = true)]
async fn a_named_race_retry_site_is_set_by_its_name() {
    let _serial = serial();
    let deadlines = || race_retry::stats("names.search").map_or(0, |stats| stats.deadlines);
    let before = deadlines();
    assert_eq!(search_to_deadline().await, (secs(1), 3));
    let sites = settings::sites();
    assert!(
        sites.contains(&(Policy::RaceRetry, "names.search".to_owned())),
        "{sites:?}"
    );
    assert!(
        !sites.iter().any(|(_, name)| name.ends_with("::search")),
        "{sites:?}"
    );
    assert_eq!(
        effective(Policy::RaceRetry, "names.search", "total"),
        (Some(Value::Duration(secs(1))), Source::Attribute)
    );
    assert!(race_retry::get("names.search").is_some());

    settings::set(Policy::RaceRetry, "names.search", "total", "300ms").unwrap();
    settings::set(Policy::RaceRetry, "names.search", "retries", 1).unwrap();
    settings::set(Policy::RaceRetry, "names.search", "budget", "off").unwrap();
    assert_eq!(search_to_deadline().await, (ms(300), 2));
    assert_eq!(deadlines() - before, 2);
    for setting in ["total", "retries", "budget"] {
        settings::unset(Policy::RaceRetry, "names.search", setting).unwrap();
    }
}

/// `RESILIENCY_RACE_RETRY__<NAME>__<SETTING>`.
#[tokio::test(start_paused = true)]
async fn a_named_race_retry_site_takes_its_environment_variable() {
    let _serial = serial();
    search_to_deadline().await;
    let variable = "RESILIENCY_RACE_RETRY__NAMES_SEARCH__TOTAL";
    std::env::set_var(variable, "250ms");
    settings::load_env().unwrap();
    assert_eq!(
        effective(Policy::RaceRetry, "names.search", "total").1,
        Source::Environment {
            variable: variable.into()
        }
    );
    assert_eq!(search_to_deadline().await.0, ms(250));
    clean();
    assert_eq!(search_to_deadline().await.0, secs(1));
}

#[race_retry(
    name = "names.shared_race",
    retries = 1,
    after = "50ms",
    total = "200ms"
)]
async fn shared_race_a() -> Result<(), Rejected> {
    std::future::pending::<()>().await;
    Ok(())
}

#[race_retry(name = "names.shared_race", retries = 2, after = "1s", total = "5s")]
async fn shared_race_b() -> Result<(), Rejected> {
    std::future::pending::<()>().await;
    Ok(())
}

/// Two `#[race_retry]` fns of one name share one policy: the first set up gives the options, and
/// the stats count both.
#[tokio::test(start_paused = true)]
async fn race_retry_sites_of_one_name_share_one_policy() {
    let _serial = serial();
    let start = Instant::now();
    assert!(shared_race_a().await.unwrap_err().is_deadline());
    assert_eq!(start.elapsed(), ms(200));
    let start = Instant::now();
    assert!(shared_race_b().await.unwrap_err().is_deadline());
    assert_eq!(start.elapsed(), ms(200), "the first site's options");
    assert_eq!(race_retry::stats("names.shared_race").unwrap().deadlines, 2);
    let of_name = settings::sites()
        .into_iter()
        .filter(|site| *site == (Policy::RaceRetry, "names.shared_race".to_owned()))
        .count();
    assert_eq!(of_name, 1, "one site, one set of settings");
}
