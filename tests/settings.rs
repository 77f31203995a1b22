//! Run-time settings by name, through the facade: overrides from code, a file and the
//! environment, their precedence, live changes that keep each policy's state, and bad values
//! refused with their source named while the previous value stays in force.
//!
//! The layers are process-wide, so every test here runs alone (`serial`) and leaves the file and
//! environment layers empty. (Each test has a runtime of its own, so holding the lock across
//! its awaits blocks nothing but the other tests.)
#![allow(clippy::await_holding_lock)]

use std::pin::pin;
use std::time::Duration;

use resiliency::breaker::State;
use resiliency::settings::{self, Effective, Overrides, Policy, Source, Value, ALL};
use resiliency::{breaker, race_retry, too_busy, Rejected};
use tokio::sync::oneshot;
use tokio::time::sleep;

mod support;
use support::{ms, poll_once, secs, serial, BoxError, Captured};

fn setting(site: &str, policy: Policy, name: &str) -> Effective {
    settings::effective(policy, site)
        .unwrap_or_else(|| panic!("no live site {site}"))
        .into_iter()
        .find(|e| e.setting == name)
        .unwrap()
}

/// Leaves the file and environment layers empty for the next test.
fn clean() {
    settings::load("none", &Overrides::new()).unwrap();
    for (key, _) in std::env::vars() {
        if key.starts_with("RESILIENCY_") && key != "RESILIENCY_DISABLED" {
            std::env::remove_var(key);
        }
    }
    settings::load_env().unwrap();
}

#[breaker(name = "settings::code", error_threshold = 3, error_timeout = "10s")]
async fn by_code(fail: bool) -> Result<(), BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(())
    }
}

/// Code overrides one site; `effective` reads each setting back with where it comes from; `unset`
/// gives the attribute's value back.
#[tokio::test(start_paused = true)]
async fn code_overrides_a_site_and_effective_says_where_each_value_comes_from() {
    let _serial = serial();
    by_code(false).await.unwrap();
    let threshold = setting("settings::code", Policy::Breaker, "error_threshold");
    assert_eq!(
        (threshold.value, threshold.source),
        (Some(Value::Int(3)), Source::Attribute)
    );
    assert_eq!(
        setting("settings::code", Policy::Breaker, "success_threshold").source,
        Source::Default
    );

    settings::set(Policy::Breaker, "settings::code", "error_threshold", 1).unwrap();
    let threshold = setting("settings::code", Policy::Breaker, "error_threshold");
    assert_eq!(
        (threshold.value, threshold.source),
        (Some(Value::Int(1)), Source::Code)
    );
    assert!(by_code(true).await.is_err());
    let b = resiliency::breaker::get("settings::code").unwrap();
    assert_eq!(b.state(), State::Open, "one error opens it now");

    settings::unset(Policy::Breaker, "settings::code", "error_threshold").unwrap();
    assert_eq!(
        setting("settings::code", Policy::Breaker, "error_threshold").source,
        Source::Attribute
    );
    b.reset();
}

#[breaker(name = "settings::file", error_threshold = 3)]
async fn by_file() -> Result<(), BoxError> {
    Ok(())
}

/// A TOML file: a site's table and the table for every site, each value's line kept.
#[cfg(feature = "toml")]
#[tokio::test(start_paused = true)]
async fn a_toml_file_overrides_sites_and_names_each_values_line() {
    let _serial = serial();
    by_file().await.unwrap();
    let text = r#"
[breaker."*"]
error_timeout = "20s"

[breaker."settings::file"]
error_threshold = 7
"#;
    let overrides = Overrides::from_toml("resiliency.toml", text).unwrap();
    settings::load("resiliency.toml", &overrides).unwrap();
    let threshold = setting("settings::file", Policy::Breaker, "error_threshold");
    assert_eq!(threshold.value, Some(Value::Int(7)));
    assert_eq!(
        threshold.source.to_string(),
        "resiliency.toml:6",
        "{threshold:?}"
    );
    assert_eq!(
        resiliency::breaker::get("settings::file")
            .unwrap()
            .error_timeout(),
        secs(20)
    );
    assert_eq!(
        setting("settings::file", Policy::Breaker, "error_timeout")
            .source
            .to_string(),
        "resiliency.toml:3"
    );
    clean();
    assert_eq!(
        resiliency::breaker::get("settings::file")
            .unwrap()
            .error_timeout(),
        resiliency::Breaker::builder("settings::unset")
            .build()
            .unwrap()
            .error_timeout(),
        "loading another file takes the previous file's values away"
    );
}

#[too_busy(max_in_flight = 1)]
async fn guarded(hold: Option<oneshot::Receiver<()>>) -> Result<(), Rejected> {
    if let Some(hold) = hold {
        let _ = hold.await;
    }
    Ok(())
}

/// `RESILIENCY_<POLICY>__<SITE>__<SETTING>`, the site's path written with `__`; and
/// `RESILIENCY_<POLICY>__<SETTING>` for every site.
#[tokio::test(start_paused = true)]
async fn environment_variables_follow_the_naming_scheme() {
    let _serial = serial();
    guarded(None).await.unwrap();
    let site = "settings::guarded";
    assert!(
        settings::effective(Policy::TooBusy, site).is_some(),
        "{:?}",
        settings::sites()
    );

    std::env::set_var("RESILIENCY_TOO_BUSY__SETTINGS__GUARDED__MAX_IN_FLIGHT", "2");
    std::env::set_var("RESILIENCY_BREAKER__ERROR_TIMEOUT", "3s");
    settings::load_env().unwrap();
    let limit = setting(site, Policy::TooBusy, "max_in_flight");
    assert_eq!(limit.value, Some(Value::Text("2".into())));
    assert_eq!(
        limit.source,
        Source::Environment {
            variable: "RESILIENCY_TOO_BUSY__SETTINGS__GUARDED__MAX_IN_FLIGHT".into()
        }
    );
    // Two calls run at once now; the third is refused.
    let (release_a, hold_a) = oneshot::channel();
    let (release_b, hold_b) = oneshot::channel();
    let mut a = pin!(guarded(Some(hold_a)));
    let mut b = pin!(guarded(Some(hold_b)));
    assert!(poll_once(a.as_mut()).await.is_pending());
    assert!(poll_once(b.as_mut()).await.is_pending());
    assert!(guarded(None).await.unwrap_err().is_too_busy());
    release_a.send(()).unwrap();
    release_b.send(()).unwrap();
    a.await.unwrap();
    b.await.unwrap();

    by_code(false).await.unwrap();
    assert_eq!(
        resiliency::breaker::get("settings::code")
            .unwrap()
            .error_timeout(),
        secs(3),
        "the variable for every breaker"
    );
    clean();
    assert_eq!(
        resiliency::breaker::get("settings::code")
            .unwrap()
            .error_timeout(),
        secs(10)
    );
}

#[breaker(name = "settings::order", error_threshold = 2)]
async fn ordered() -> Result<(), BoxError> {
    Ok(())
}

/// Code over the environment over the file over the attribute; within a layer, the site's own
/// value over the one for every site.
#[tokio::test(start_paused = true)]
async fn code_wins_over_the_environment_which_wins_over_the_file() {
    let _serial = serial();
    ordered().await.unwrap();
    let site = "settings::order";
    let threshold = || setting(site, Policy::Breaker, "error_threshold");

    let file = Overrides::new()
        .with(Policy::Breaker, site, "error_threshold", 4)
        .with(Policy::Breaker, ALL, "error_threshold", 9);
    settings::load("app.json", &file).unwrap();
    assert_eq!(
        threshold().value,
        Some(Value::Int(4)),
        "the site's own over every site's"
    );
    assert_eq!(threshold().source.to_string(), "app.json");

    std::env::set_var("RESILIENCY_BREAKER__ERROR_THRESHOLD", "5");
    settings::load_env().unwrap();
    assert_eq!(
        threshold().value,
        Some(Value::Text("5".into())),
        "the environment's value for every site over the file's for this one"
    );

    settings::set(Policy::Breaker, site, "error_threshold", 6).unwrap();
    assert_eq!(
        (threshold().value, threshold().source),
        (Some(Value::Int(6)), Source::Code)
    );

    settings::unset(Policy::Breaker, site, "error_threshold").unwrap();
    clean();
    assert_eq!(threshold().source, Source::Attribute);
}

#[breaker(name = "settings::live", error_threshold = 3, error_timeout = "10s")]
async fn live(fail: bool) -> Result<(), BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(())
    }
}

/// A change reaches a live breaker without losing its state: the errors counted so far stay
/// while the rule is unchanged, and an open breaker stays open, half-opening by its new
/// `error_timeout` counted from its last error.
#[tokio::test(start_paused = true)]
async fn a_live_breaker_keeps_its_state_through_a_change() {
    let _serial = serial();
    let site = "settings::live";
    let _ = live(true).await;
    let _ = live(true).await;
    let b = resiliency::breaker::get(site).unwrap();
    settings::set(Policy::Breaker, site, "error_timeout", "4s").unwrap();
    assert_eq!(b.snapshot().recent_errors, 2, "the count is kept");
    let _ = live(true).await;
    assert_eq!(b.state(), State::Open, "the third error opens it");

    sleep(secs(1)).await;
    settings::set(Policy::Breaker, site, "error_timeout", "2s").unwrap();
    assert_eq!(b.state(), State::Open, "still open after the change");
    let refused = live(false).await.unwrap_err();
    assert!(support::rejected(&refused).is_circuit_open());
    sleep(secs(1)).await;
    assert_eq!(b.state(), State::HalfOpen, "2 s after the last error");
    live(false).await.unwrap();
    assert_eq!(b.state(), State::Closed);

    // A new rule starts a new count.
    let _ = live(true).await;
    settings::set(Policy::Breaker, site, "error_threshold", 2).unwrap();
    assert_eq!(b.snapshot().recent_errors, 0);
    let _ = live(true).await;
    assert_eq!(b.state(), State::Closed);
    let _ = live(true).await;
    assert_eq!(b.state(), State::Open);

    settings::unset(Policy::Breaker, site, "error_timeout").unwrap();
    settings::unset(Policy::Breaker, site, "error_threshold").unwrap();
    b.reset();
}

/// A bad value from code, a file or the environment is refused whole with the site, the setting
/// and the source named, and the value in force stays.
#[tokio::test(start_paused = true)]
async fn a_bad_value_is_refused_with_its_source_and_the_old_value_stays() {
    let _serial = serial();
    let site = "settings::live";
    live(false).await.unwrap();
    let b = resiliency::breaker::get(site).unwrap();
    settings::set(Policy::Breaker, site, "error_timeout", "5s").unwrap();

    let from_code = settings::set(Policy::Breaker, site, "capacity", 1.5).unwrap_err();
    assert_eq!(
        from_code.errors()[0].to_string(),
        "code: breaker `settings::live`, `capacity`: `capacity` must lie between 0 and 1 \
         (exclusive), got 1.5: it is the share of time a worker stays free, e.g. `capacity = 0.75`"
    );
    let from_code = settings::set(Policy::Breaker, site, "timeout", "2 parsecs").unwrap_err();
    assert_eq!(from_code.errors()[0].setting(), "timeout");
    assert_eq!(b.error_timeout(), secs(5));
    assert_eq!(b.timeout(), None);

    // A file: refused whole, the good value in it included.
    let file = Overrides::new()
        .with(Policy::Breaker, site, "error_timeout", "1s")
        .with(Policy::Breaker, site, "half_open_calls", 0);
    let from_file = settings::load("resiliency.json", &file).unwrap_err();
    assert_eq!(
        from_file.to_string(),
        "resiliency.json: breaker `settings::live`, `half_open_calls`: `half_open_calls` must be \
         at least 1, e.g. `half_open_calls = 3`"
    );
    assert_eq!(b.error_timeout(), secs(5), "nothing of the file applied");

    std::env::set_var(
        "RESILIENCY_BREAKER__SETTINGS__LIVE__SUCCESS_THRESHOLD",
        "70000",
    );
    let from_env = settings::load_env().unwrap_err();
    let error = &from_env.errors()[0];
    assert_eq!(
        error.source(),
        &Source::Environment {
            variable: "RESILIENCY_BREAKER__SETTINGS__LIVE__SUCCESS_THRESHOLD".into()
        }
    );
    assert_eq!(
        (error.site(), error.setting()),
        ("settings::live", "success_threshold")
    );
    std::env::remove_var("RESILIENCY_BREAKER__SETTINGS__LIVE__SUCCESS_THRESHOLD");

    // A value for every site is checked at every live site it reaches.
    let every = settings::set(Policy::Breaker, ALL, "min_calls", 5).unwrap_err();
    assert!(
        every
            .errors()
            .iter()
            .any(|e| e.site() == site && e.setting() == "min_calls"),
        "{every}"
    );

    // A misspelt site is kept (it may be set up later) and listed by `unmatched`.
    settings::set(Policy::Breaker, "settings::lvie", "error_threshold", 5).unwrap();
    assert!(settings::unmatched()
        .iter()
        .any(|(p, s, n, src)| (*p, s.as_str(), *n, src)
            == (
                Policy::Breaker,
                "settings::lvie",
                "error_threshold",
                &Source::Code
            )));
    settings::unset(Policy::Breaker, "settings::lvie", "error_threshold").unwrap();

    let typo = settings::set(Policy::Breaker, site, "error_treshold", 5).unwrap_err();
    assert!(
        typo.to_string().contains("did you mean `error_threshold`?"),
        "{typo}"
    );
    settings::unset(Policy::Breaker, site, "error_timeout").unwrap();
    clean();
}

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn raced(attempts: &std::sync::atomic::AtomicU32) -> Result<u32, Rejected> {
    let n = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(n)
}

/// A live race takes new `retries`, `after` and `total` on its next call.
#[tokio::test(start_paused = true)]
async fn a_live_race_takes_its_new_settings_on_the_next_call() {
    let _serial = serial();
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    assert!(raced(&attempts).await.unwrap_err().is_deadline());
    assert_eq!(start.elapsed(), secs(1));
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 3);

    let site = "settings::raced";
    settings::set(Policy::RaceRetry, site, "total", "300ms").unwrap();
    settings::set(Policy::RaceRetry, site, "retries", 1).unwrap();
    settings::set(Policy::RaceRetry, site, "budget", "off").unwrap();
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    assert!(raced(&attempts).await.unwrap_err().is_deadline());
    assert_eq!(start.elapsed(), ms(300));
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 2);
    let stats = resiliency::race_retry::stats(site).unwrap();
    assert_eq!(stats.deadlines, 2, "the counters are kept");

    let refused = settings::set(Policy::RaceRetry, site, "after", "2s").unwrap_err();
    assert!(
        refused.errors()[0].message().contains("`after`"),
        "{refused}"
    );
    for name in ["total", "retries", "budget"] {
        settings::unset(Policy::RaceRetry, site, name).unwrap();
    }
}

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn raced_capped(attempts: &std::sync::atomic::AtomicU32) -> Result<u32, Rejected> {
    let n = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(n)
}

/// `max_attempts_in_flight` by name, from a file and from the environment (which wins): the race
/// starts as many attempts as it allows before the deadline, where the attribute gave none.
#[cfg(feature = "toml")]
#[tokio::test(start_paused = true)]
async fn a_race_takes_its_attempts_in_flight_from_a_file_and_the_environment() {
    let _serial = serial();
    let site = "settings::raced_capped";
    let attempts_made = || async {
        let attempts = std::sync::atomic::AtomicU32::new(0);
        assert!(raced_capped(&attempts).await.unwrap_err().is_deadline());
        attempts.load(std::sync::atomic::Ordering::SeqCst)
    };
    assert_eq!(attempts_made().await, 3);

    let text = "[race_retry.\"settings::raced_capped\"]\nmax_attempts_in_flight = 1\n";
    let overrides = Overrides::from_toml("resiliency.toml", text).unwrap();
    settings::load("resiliency.toml", &overrides).unwrap();
    let cap = setting(site, Policy::RaceRetry, "max_attempts_in_flight");
    assert_eq!(
        (cap.value, cap.source.to_string()),
        (Some(Value::Int(1)), "resiliency.toml:2".to_owned())
    );
    assert_eq!(attempts_made().await, 1);

    std::env::set_var(
        "RESILIENCY_RACE_RETRY__SETTINGS__RACED_CAPPED__MAX_ATTEMPTS_IN_FLIGHT",
        "2",
    );
    settings::load_env().unwrap();
    assert_eq!(attempts_made().await, 2);
    clean();
    assert_eq!(attempts_made().await, 3);
}

/// A guard's limit can change while calls are in flight: each call gives back the slot it took,
/// so the count comes back to zero whatever the limit became.
#[tokio::test(start_paused = true)]
async fn a_guards_limit_changes_with_calls_in_flight() {
    let _serial = serial();
    let site = "settings::guarded";
    guarded(None).await.unwrap();
    let (release, hold) = oneshot::channel();
    let mut running = pin!(guarded(Some(hold)));
    assert!(poll_once(running.as_mut()).await.is_pending());
    settings::set(Policy::TooBusy, site, "max_in_flight", "off").unwrap();
    settings::set(Policy::TooBusy, site, "max_lag", "50ms").unwrap();
    let (release_b, hold_b) = oneshot::channel();
    {
        // Admitted without a slot; dropped while running.
        let mut untracked = pin!(guarded(Some(hold_b)));
        assert!(poll_once(untracked.as_mut()).await.is_pending());
    }
    drop(release_b);
    settings::unset(Policy::TooBusy, site, "max_in_flight").unwrap();
    settings::unset(Policy::TooBusy, site, "max_lag").unwrap();
    release.send(()).unwrap();
    running.await.unwrap();
    // Back to `max_in_flight = 1`, with nothing held.
    let (release, hold) = oneshot::channel();
    let mut one = pin!(guarded(Some(hold)));
    assert!(poll_once(one.as_mut()).await.is_pending());
    assert!(guarded(None).await.unwrap_err().is_too_busy());
    release.send(()).unwrap();
    one.await.unwrap();
}

#[breaker(name = "settings::late", error_threshold = 3)]
async fn late() -> Result<(), BoxError> {
    Ok(())
}

/// Overrides loaded before a site's first call apply when it is set up; one that breaks a rule
/// there is left out (the attribute's value stands) and logged with its source.
#[tokio::test(start_paused = true)]
async fn a_site_set_up_later_takes_its_overrides_and_leaves_out_a_bad_one() {
    let _serial = serial();
    let site = "settings::late";
    let file = Overrides::new()
        .with(Policy::Breaker, site, "error_timeout", "42s")
        // Breaks a rule only at this site, checked when it is set up:
        .with(Policy::Breaker, site, "min_calls", 5);
    settings::load("late.toml", &file).unwrap();
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .finish();
    {
        let _default = tracing::subscriber::set_default(subscriber);
        late().await.unwrap();
    }
    let b = resiliency::breaker::get(site).unwrap();
    assert_eq!(b.error_timeout(), secs(42));
    let effective = setting(site, Policy::Breaker, "min_calls");
    assert_eq!(effective.source, Source::Default, "{effective:?}");
    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        output.contains(
            "late.toml: breaker `settings::late`, `min_calls`: `min_calls` belongs to the rate rule"
        ),
        "{output}"
    );
    clean();
}

/// A keyed family takes a change on every key it holds and on the keys it creates later.
#[tokio::test(start_paused = true)]
async fn a_keyed_family_takes_a_change_on_every_key() {
    let _serial = serial();
    #[breaker(name = "settings::keyed", key = host, error_threshold = 1)]
    async fn per_host(host: &str) -> Result<(), BoxError> {
        Err(format!("{host} is down").into())
    }
    let _ = per_host("a").await;
    let family = resiliency::breaker::get_keyed("settings::keyed").unwrap();
    assert_eq!(family.breaker("a").state(), State::Open);
    settings::set(Policy::Breaker, "settings::keyed", "error_timeout", "1s").unwrap();
    assert_eq!(family.breaker("a").error_timeout(), secs(1));
    assert_eq!(family.breaker("a").state(), State::Open, "still open");
    assert_eq!(family.breaker("b").error_timeout(), secs(1), "a new key");
    sleep(secs(1)).await;
    assert_eq!(family.breaker("a").state(), State::HalfOpen);
    settings::unset(Policy::Breaker, "settings::keyed", "error_timeout").unwrap();
    assert_eq!(family.breaker("a").error_timeout(), Duration::from_secs(10));
}

/// `Overrides` deserializes from any serde format: JSON here.
#[cfg(feature = "serde")]
#[test]
fn overrides_deserialize_from_any_format() {
    let json = r#"{
        "breaker": { "payments": { "error_threshold": 5, "timeout": "2s" } },
        "too_busy": { "*": { "max_in_flight": "off" } }
    }"#;
    let overrides: Overrides = serde_json::from_str(json).unwrap();
    let entries: Vec<_> = overrides
        .entries()
        .iter()
        .map(|e| {
            (
                e.policy,
                e.site.as_str(),
                e.setting.as_str(),
                e.value.clone(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (
                Policy::Breaker,
                "payments",
                "error_threshold",
                Value::Int(5)
            ),
            (Policy::Breaker, "payments", "timeout", "2s".into()),
            (Policy::TooBusy, "*", "max_in_flight", "off".into()),
        ]
    );
    let unknown = serde_json::from_str::<Overrides>(r#"{"breakr": {}}"#).unwrap_err();
    assert!(
        unknown.to_string().starts_with(
            "`breakr` is not a policy; the policies are breaker, race_retry, too_busy"
        ),
        "{unknown}"
    );
}
