//! What the settings promise beyond the basics of `tests/settings.rs`: `effective` reports what
//! is in force, a refusal blames the setting that was changed, no mistake goes unreported, no
//! value or subscriber wedges the store, the work of a change does not grow with what it does
//! not touch, and a refused environment can be read again.
//!
//! Settings are process-wide: each test uses sites of its own, so most run in parallel; those
//! that load a file or the environment hold `serial()`, and those that need a process where no
//! site is set up yet run their body in a fresh copy of this binary (`fresh_process`).

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resiliency::settings::{self, Effective, Overrides, Policy, Source, Value};
use resiliency::{breaker, race_retry, Breaker, Rejected};

mod support;
use support::{ms, secs, serial, BoxError, Captured};

fn setting(policy: Policy, site: &str, name: &str) -> Effective {
    settings::effective(policy, site)
        .unwrap_or_else(|| panic!("no live site {site}"))
        .into_iter()
        .find(|e| e.setting == name)
        .unwrap()
}

/// In the parent: runs `test` alone in a fresh copy of this binary with `env` added, and checks
/// that it passed within a minute; returns false. In that copy: returns true, and the caller runs
/// the test's body.
fn fresh_process(test: &str, env: &[(&str, &str)]) -> bool {
    const CHILD: &str = "SETTINGS_PROMISES_CHILD";
    if std::env::var(CHILD).as_deref() == Ok(test) {
        return true;
    }
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (key, _) in std::env::vars() {
        if key.starts_with("RESILIENCY_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("`{test}` did not finish within a minute (a deadlock?)");
        }
        std::thread::sleep(ms(20));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "`{test}` failed:\n{out}");
    assert!(out.contains("1 passed"), "`{test}` did not run:\n{out}");
    false
}

/// A capturing `tracing` subscriber (every level) and what it wrote.
fn capture() -> (impl tracing::Subscriber + Send + Sync, Captured) {
    let captured = Captured::default();
    (captured.subscriber(), captured)
}

fn text(captured: &Captured) -> String {
    captured.text()
}

// 1. `effective` reports what is in force.

#[breaker(name = "promises::derived", timeout = "1s", error_timeout = "20s")]
async fn derived() -> Result<(), BoxError> {
    Ok(())
}

/// `capacity` set at run time gives the breaker its `error_timeout`; `effective` reports that
/// value, derived, and where it comes from.
#[tokio::test]
async fn effective_reports_a_value_derived_from_another_setting() {
    let site = "promises::derived";
    derived().await.unwrap();
    settings::set(Policy::Breaker, site, "capacity", 0.75).unwrap();
    let breaker = resiliency::breaker::get(site).unwrap();
    assert_eq!(breaker.error_timeout(), secs(3), "1s * 0.75 / 0.25");
    let open_for = setting(Policy::Breaker, site, "error_timeout");
    assert_eq!(
        open_for.value,
        Some(Value::Duration(secs(3))),
        "{open_for:?}"
    );
    assert_eq!(
        open_for.source.to_string(),
        "derived from capacity (0.75, set at run time)"
    );
    let capacity = setting(Policy::Breaker, site, "capacity");
    assert_eq!(
        (capacity.value, capacity.source),
        (Some(Value::Float(0.75)), Source::Code)
    );

    settings::unset(Policy::Breaker, site, "capacity").unwrap();
    assert_eq!(breaker.error_timeout(), secs(20));
    let open_for = setting(Policy::Breaker, site, "error_timeout");
    assert_eq!(
        (open_for.value, open_for.source),
        (Some(Value::Duration(secs(20))), Source::Attribute)
    );
}

// 2. A refusal across two settings blames the one changed.

#[race_retry(retries = 2, after = "100ms", total = "1s")]
async fn crossed() -> Result<(), Rejected> {
    Ok(())
}

/// A `total` below the attribute's `after`, from a file and from code: the refusal names
/// `total`, its file and line, and the rule with the other setting's value and source.
#[tokio::test]
async fn a_refusal_names_the_setting_changed_its_line_and_the_rule() {
    let site = "settings_promises::crossed";
    crossed().await.unwrap();
    let _serial = serial();
    let text = format!("[race_retry.\"{site}\"]\ntotal = \"50ms\"\n");
    let overrides = Overrides::from_toml("resiliency.toml", &text).unwrap();
    let refused = settings::load("resiliency.toml", &overrides).unwrap_err();
    assert_eq!(refused.errors().len(), 1, "{refused}");
    let error = &refused.errors()[0];
    assert_eq!(
        (error.site(), error.setting()),
        (site, "total"),
        "{refused}"
    );
    assert_eq!(error.source().to_string(), "resiliency.toml:2");
    assert!(
        error.message().starts_with(
            "`total` = 50ms from resiliency.toml:2 must stay above `after` (100ms, from the attribute)"
        ),
        "{refused}"
    );

    let refused = settings::set(Policy::RaceRetry, site, "total", "50ms").unwrap_err();
    let error = &refused.errors()[0];
    assert_eq!((error.setting(), error.source()), ("total", &Source::Code));
    assert!(
        error.message().starts_with(
            "`total` = 50ms set at run time must stay above `after` (100ms, from the attribute)"
        ),
        "{refused}"
    );

    // The setting a rule is written for, changed itself, is named as before.
    let refused = settings::set(Policy::RaceRetry, site, "after", "2s").unwrap_err();
    let error = &refused.errors()[0];
    assert_eq!(error.setting(), "after");
    assert!(
        error
            .message()
            .contains("`after` must be below `total` (1s)"),
        "{refused}"
    );
}

// 3. No silent mistakes.

/// A site misspelt in an environment variable is warned about once, when the site it is near is
/// set up, and a variable for a site not set up yet is not; a bad value in one names the site as
/// the site is named.
#[test]
fn environment_mistakes_are_reported_at_the_first_set_up() {
    if !fresh_process(
        "environment_mistakes_are_reported_at_the_first_set_up",
        &[
            ("RESILIENCY_BREAKER__UPSTRAEM__TIMEOUT", "2s"),
            ("RESILIENCY_BREAKER__UPSTREAM__ERROR_THRESHOLD", "many"),
            // Misspelt, for a site set up after the environment was read.
            ("RESILIENCY_BREAKER__DOWNSTRAEM__TIMEOUT", "2s"),
            // Right, for a site not set up yet: no warning.
            ("RESILIENCY_BREAKER__LATER__TIMEOUT", "2s"),
        ],
    ) {
        return;
    }
    #[breaker(name = "upstream")]
    fn upstream() -> Result<(), BoxError> {
        Ok(())
    }
    #[breaker(name = "downstream")]
    fn downstream() -> Result<(), BoxError> {
        Ok(())
    }
    let (subscriber, captured) = capture();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    upstream().unwrap();
    downstream().unwrap();
    let out = text(&captured);
    let warnings: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("RESILIENCY_BREAKER__UPSTRAEM__TIMEOUT"))
        .collect();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(warnings[0].contains("resiliency::settings"), "{out}");
    assert!(
        warnings[0].contains("upstream"),
        "a hint at the near name: {out}"
    );
    assert!(
        out.contains("breaker `upstream`, `error_threshold`"),
        "the site as it is named: {out}"
    );
    assert!(!out.contains("`UPSTREAM`"), "{out}");
    let downstream: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("RESILIENCY_BREAKER__DOWNSTRAEM__TIMEOUT"))
        .collect();
    assert_eq!(downstream.len(), 1, "{out}");
    assert!(downstream[0].contains("downstream"), "{out}");
    assert!(
        !out.lines()
            .any(|l| l.contains("WARN") && l.contains("RESILIENCY_BREAKER__LATER__TIMEOUT")),
        "a variable for a site not set up yet is no mistake: {out}"
    );
    let refused = settings::load_env().unwrap_err();
    assert_eq!(refused.errors()[0].site(), "upstream", "{refused}");
}

#[breaker(name = "promises::typed", timeout = "1s")]
async fn typed() -> Result<(), BoxError> {
    Ok(())
}

/// Values read back typed, the same whether the attribute or an override gives them.
#[tokio::test]
async fn effective_values_read_back_typed() {
    let site = "promises::typed";
    typed().await.unwrap();
    let in_force = settings::effective(Policy::Breaker, site).unwrap();
    assert_eq!(in_force.duration("timeout"), Some(secs(1)));
    assert_eq!(in_force.duration("error_timeout"), None, "the default");
    settings::set(Policy::Breaker, site, "timeout", "2s").unwrap();
    settings::set(Policy::Breaker, site, "error_threshold", "7").unwrap();
    let in_force = settings::effective(Policy::Breaker, site).unwrap();
    assert_eq!(in_force.duration("timeout"), Some(secs(2)));
    assert_eq!(in_force.count("error_threshold"), Some(7));
    assert_eq!(in_force.get("timeout").unwrap().source, Source::Code);
    settings::set(Policy::Breaker, site, "timeout", "off").unwrap();
    let in_force = settings::effective(Policy::Breaker, site).unwrap();
    assert_eq!(in_force.duration("timeout"), None);
    assert!(in_force.get("timeout").unwrap().is_off());
    settings::set(Policy::Breaker, site, "capacity", "0.5").unwrap_err();
    settings::set(Policy::Breaker, site, "timeout", ms(500)).unwrap();
    settings::set(Policy::Breaker, site, "capacity", "0.5").unwrap();
    let in_force = settings::effective(Policy::Breaker, site).unwrap();
    assert_eq!(in_force.number("capacity"), Some(0.5));
    assert_eq!(in_force.duration("error_timeout"), Some(ms(500)), "derived");
}

/// A change that changes nothing at any live site logs nothing at info.
#[test]
fn a_change_that_reaches_no_site_logs_nothing_at_info() {
    let (subscriber, captured) = capture();
    tracing::subscriber::with_default(subscriber, || {
        settings::set(Policy::Breaker, "promises::nowhere", "error_threshold", 5).unwrap();
        settings::unset(Policy::Breaker, "promises::nowhere", "error_threshold").unwrap();
    });
    let out = text(&captured);
    assert!(
        !out.lines().any(|l| l.contains(" INFO ")),
        "nothing changed: {out}"
    );
}

// 4. Nothing wedges the store.

/// NaN (or an infinity) is refused where it is read, so that no value that equals nothing is
/// kept; a site set up after the refusal, and changes at other sites, go on.
#[test]
fn nan_is_refused_where_it_is_read_and_wedges_nothing() {
    let _serial = serial();
    let text = "[breaker.\"promises::nan\"]\ncapacity = nan\n";
    let refused = Overrides::from_toml("nan.toml", text).unwrap_err();
    assert!(refused.to_string().starts_with("nan.toml:2: "), "{refused}");
    assert!(refused.to_string().contains("finite"), "{refused}");
    let refused =
        settings::set(Policy::Breaker, "promises::nan", "capacity", f64::NAN).unwrap_err();
    assert!(refused.to_string().contains("finite"), "{refused}");
    settings::set(Policy::Breaker, "promises::nan", "backoff", f64::INFINITY).unwrap_err();

    // From serde (or `Overrides::with`), refused by `load`; were it taken, the site set up
    // later would leave it out and no later change could pass.
    let file = Overrides::new().with(Policy::Breaker, "promises::nan", "capacity", f64::NAN);
    let loaded = settings::load("nan.json", &file);
    #[breaker(name = "promises::nan")]
    fn nan_site() -> Result<(), BoxError> {
        Ok(())
    }
    nan_site().unwrap();
    let later = settings::set(Policy::Breaker, "promises::nan-other", "error_threshold", 4);
    settings::load("none", &Overrides::new()).unwrap();
    assert!(loaded.is_err(), "NaN taken from a file");
    later.unwrap();
    settings::unset(Policy::Breaker, "promises::nan-other", "error_threshold").unwrap();
}

/// A subscriber whose handling of the settings' events reaches a site's first call does not
/// deadlock the change that emitted them.
#[test]
fn a_subscriber_that_sets_up_a_site_does_not_deadlock_a_change() {
    if !fresh_process(
        "a_subscriber_that_sets_up_a_site_does_not_deadlock_a_change",
        &[],
    ) {
        return;
    }
    #[breaker(name = "promises::in_subscriber")]
    fn in_subscriber() -> Result<(), BoxError> {
        Ok(())
    }
    struct CallsASite(AtomicBool);
    impl tracing::Subscriber for CallsASite {
        support::no_spans!();

        fn event(&self, event: &tracing::Event<'_>) {
            if event
                .metadata()
                .target()
                .starts_with("resiliency::settings")
                && !self.0.swap(true, Ordering::SeqCst)
            {
                in_subscriber().unwrap();
                assert!(!settings::sites().is_empty());
            }
        }
    }
    let _live = Breaker::builder("promises::subscribed").register().unwrap();
    let subscriber = Arc::new(CallsASite(AtomicBool::new(false)));
    tracing::subscriber::set_global_default(subscriber.clone()).unwrap();
    let file = Overrides::new().with(
        Policy::Breaker,
        "promises::subscribed",
        "error_threshold",
        9,
    );
    settings::load("resiliency.toml", &file).unwrap();
    assert!(subscriber.0.load(Ordering::SeqCst), "an event was emitted");
    assert!(settings::effective(Policy::Breaker, "promises::in_subscriber").is_some());

    // An override left out at a set-up is logged too, with the lock released.
    let file = file.with(Policy::Breaker, "promises::late", "min_calls", 5);
    settings::load("resiliency.toml", &file).unwrap();
    subscriber.0.store(false, Ordering::SeqCst);
    #[breaker(name = "promises::late")]
    fn late() -> Result<(), BoxError> {
        Ok(())
    }
    late().unwrap();
    assert!(subscriber.0.load(Ordering::SeqCst), "an event was emitted");
}

// 5. The work of a change grows with what it touches.

/// The shortest of a few runs of `f`.
fn fastest(mut f: impl FnMut()) -> Duration {
    (0..5)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .min()
        .unwrap()
}

/// A file 8 times longer takes well under 24 times as long to read (linear: 8; quadratic: 64).
#[test]
fn reading_a_toml_file_is_linear_in_its_size() {
    let file = |sites: usize| {
        (0..sites)
            .map(|i| {
                format!(
                    "[breaker.\"promises::file::{i}\"]\nerror_threshold = 5\ntimeout = \"2s\"\n\n"
                )
            })
            .collect::<String>()
    };
    let (small, large) = (file(1_000), file(8_000));
    let read = |text: &str| {
        fastest(|| {
            let overrides = Overrides::from_toml("big.toml", text).unwrap();
            let last = overrides.entries().iter().filter_map(|e| e.line).max();
            assert_eq!(last, Some(text.lines().count() as u32 - 1));
        })
    };
    let (small, large) = (read(&small), read(&large));
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    assert!(
        ratio < 24.0,
        "8x the file took {ratio:.1}x the time ({small:?}, {large:?})"
    );
}

/// A change for one breaker costs the same whatever the keyed families hold (64 times the keys,
/// well under 5 times the time).
#[test]
fn a_change_for_one_breaker_does_not_walk_other_families_keys() {
    if !fresh_process(
        "a_change_for_one_breaker_does_not_walk_other_families_keys",
        &[],
    ) {
        return;
    }
    let _one = Breaker::builder("promises::one").register().unwrap();
    let family = Breaker::builder("promises::family")
        .register_keyed()
        .unwrap();
    let change = || {
        fastest(|| {
            for _ in 0..20 {
                settings::set(Policy::Breaker, "promises::one", "error_threshold", 4).unwrap();
                settings::unset(Policy::Breaker, "promises::one", "error_threshold").unwrap();
            }
        })
    };
    for key in 0..1_000 {
        family.breaker(&format!("k{key}"));
    }
    let few = change();
    for key in 1_000..64_000 {
        family.breaker(&format!("k{key}"));
    }
    let many = change();
    let ratio = many.as_secs_f64() / few.as_secs_f64().max(1e-6);
    assert!(
        ratio < 5.0,
        "64x the keys took {ratio:.1}x the time ({few:?}, {many:?})"
    );
}

/// Setting a value at each of 8 times as many sites takes well under 24 times as long (linear: 8;
/// each change walking every site: 64 and more).
#[test]
fn setting_every_site_is_linear_in_their_number() {
    if !fresh_process("setting_every_site_is_linear_in_their_number", &[]) {
        return;
    }
    let batch = |from: usize, to: usize| {
        let names: Vec<String> = (from..to).map(|i| format!("promises::many::{i}")).collect();
        for name in &names {
            Breaker::builder(name).register().unwrap();
        }
        let mut threshold = 3;
        fastest(|| {
            threshold += 1;
            for name in &names {
                settings::set(Policy::Breaker, name, "error_threshold", threshold).unwrap();
            }
        })
    };
    let few = batch(0, 300);
    let many = batch(300, 2_700);
    let ratio = many.as_secs_f64() / few.as_secs_f64();
    assert!(
        ratio < 24.0,
        "8x the sites took {ratio:.1}x the time ({few:?}, {many:?})"
    );
}

// 6. A refused environment can be read again.

/// A bad variable refuses `load_env` before any site is set up; the good variables still apply
/// when the first site is set up, and once the bad one is fixed, `load_env` takes them all.
#[test]
fn a_refused_environment_is_read_again() {
    if !fresh_process(
        "a_refused_environment_is_read_again",
        &[
            ("RESILIENCY_BREAKER__PROMISES__GOOD__ERROR_THRESHOLD", "1"),
            ("RESILIENCY_BREAKER__PROMISES__BAD__TIMEOUT", "2 parsecs"),
        ],
    ) {
        return;
    }
    #[breaker(name = "promises::good", error_threshold = 5)]
    fn good() -> Result<(), BoxError> {
        Ok(())
    }
    let refused = settings::load_env().unwrap_err();
    assert_eq!(refused.errors()[0].setting(), "timeout", "{refused}");
    good().unwrap();
    let threshold = setting(Policy::Breaker, "promises::good", "error_threshold");
    assert_eq!(
        threshold.value,
        Some(Value::Text("1".into())),
        "{threshold:?}"
    );

    std::env::set_var("RESILIENCY_BREAKER__PROMISES__GOOD__ERROR_THRESHOLD", "2");
    settings::load_env().unwrap_err();
    assert_eq!(
        setting(Policy::Breaker, "promises::good", "error_threshold").value,
        Some(Value::Text("1".into())),
        "refused, the values in force stay"
    );
    std::env::set_var("RESILIENCY_BREAKER__PROMISES__BAD__TIMEOUT", "2s");
    settings::load_env().unwrap();
    assert_eq!(
        setting(Policy::Breaker, "promises::good", "error_threshold").value,
        Some(Value::Text("2".into()))
    );
}
