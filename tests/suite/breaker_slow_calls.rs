//! `slow_call_duration`: a call slower than it counts as a failure toward opening the breaker,
//! though it is neither cancelled nor changed (its result is returned), under either rule, from
//! the attribute, the builder and the settings by name; in async and blocking fns; and with no
//! tokio time driver.
#![allow(clippy::await_holding_lock)]

use std::time::Duration;

use resiliency::breaker::State;
use resiliency::settings::{self, Policy};
use resiliency::{breaker, Breaker};
use tokio::time::sleep;

use crate::support;
use support::{ms, rejected, serial, BoxError};

#[breaker(
    name = "slow::count",
    error_threshold = 2,
    slow_call_duration = "100ms"
)]
async fn count_rule(wait: u64) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    Ok(wait)
}

/// Slow successes count as errors and open the breaker; each returns its own result; fast calls
/// in between count nothing.
#[tokio::test(start_paused = true)]
async fn slow_successes_open_the_breaker_and_keep_their_results() {
    let breaker = resiliency::breaker::get("slow::count").map(|b| b.state());
    assert!(breaker.is_none(), "set up by its first call");
    assert_eq!(count_rule(150).await.unwrap(), 150);
    assert_eq!(count_rule(10).await.unwrap(), 10);
    assert_eq!(count_rule(99).await.unwrap(), 99);
    let site = resiliency::breaker::get("slow::count").unwrap();
    assert_eq!(site.state(), State::Closed, "one slow call of two");
    assert_eq!(
        count_rule(100).await.unwrap(),
        100,
        "at the duration is slow"
    );
    assert_eq!(site.state(), State::Open);
    let refused = count_rule(1).await.unwrap_err();
    assert!(rejected(&refused).is_circuit_open());
}

#[breaker(
    name = "slow::rate",
    failure_rate = 0.5,
    min_calls = 4,
    error_window = "10s",
    slow_call_duration = "50ms"
)]
async fn rate_rule(wait: u64) -> Result<(), BoxError> {
    sleep(ms(wait)).await;
    Ok(())
}

/// Under the rate rule a slow call is a failed call: two slow of four open the breaker.
#[tokio::test(start_paused = true)]
async fn under_the_rate_rule_a_slow_call_is_a_failed_call() {
    rate_rule(1).await.unwrap();
    rate_rule(60).await.unwrap();
    rate_rule(1).await.unwrap();
    let site = resiliency::breaker::get("slow::rate").unwrap();
    assert_eq!(site.state(), State::Closed);
    rate_rule(70).await.unwrap();
    assert_eq!(site.state(), State::Open);
}

/// A call that answers without waiting is never slow, and an error stays an error however long
/// it took (not counted twice).
#[tokio::test(start_paused = true)]
async fn a_slow_error_counts_once() {
    let breaker = Breaker::builder("slow::error")
        .error_threshold(2)
        .slow_call_duration(ms(10))
        .build()
        .unwrap();
    let slow_error = breaker.call(async {
        sleep(ms(20)).await;
        Err::<(), BoxError>("down".into())
    });
    assert!(slow_error.await.is_err());
    assert_eq!(breaker.state(), State::Closed, "one error, counted once");
    assert!(breaker.call(async { Ok::<_, BoxError>(()) }).await.is_ok());
    assert_eq!(breaker.state(), State::Closed);
}

/// A slow probe re-opens the breaker, as a failed one does.
#[tokio::test(start_paused = true)]
async fn a_slow_probe_reopens() {
    let breaker = Breaker::builder("slow::probe")
        .error_threshold(1)
        .error_timeout(Duration::from_secs(1))
        .slow_call_duration(ms(10))
        .build()
        .unwrap();
    let _ = breaker
        .call(async { Err::<(), BoxError>("down".into()) })
        .await;
    assert_eq!(breaker.state(), State::Open);
    sleep(Duration::from_secs(1)).await;
    let probe = breaker.call(async {
        sleep(ms(30)).await;
        Ok::<_, BoxError>(7)
    });
    assert_eq!(probe.await.unwrap(), 7);
    assert_eq!(breaker.state(), State::Open);
}

/// The setting by name reaches a live breaker, `effective` reports it, and `"off"` turns it off.
#[tokio::test(start_paused = true)]
async fn the_setting_by_name_reaches_a_live_breaker() {
    let _serial = serial();
    let breaker = Breaker::builder("slow::by_name")
        .error_threshold(1)
        .register()
        .unwrap();
    let slow = || {
        breaker.call(async {
            sleep(ms(30)).await;
            Ok::<_, BoxError>(())
        })
    };
    slow().await.unwrap();
    assert_eq!(breaker.state(), State::Closed);
    settings::set(
        Policy::Breaker,
        "slow::by_name",
        "slow_call_duration",
        "20ms",
    )
    .unwrap();
    let effective = settings::effective(Policy::Breaker, "slow::by_name").unwrap();
    assert_eq!(effective.duration("slow_call_duration"), Some(ms(20)));
    settings::set(
        Policy::Breaker,
        "slow::by_name",
        "slow_call_duration",
        "off",
    )
    .unwrap();
    slow().await.unwrap();
    assert_eq!(
        breaker.state(),
        State::Closed,
        "off: slow calls count nothing"
    );
    settings::set(
        Policy::Breaker,
        "slow::by_name",
        "slow_call_duration",
        "20ms",
    )
    .unwrap();
    slow().await.unwrap();
    assert_eq!(breaker.state(), State::Open);
    settings::unset(Policy::Breaker, "slow::by_name", "slow_call_duration").unwrap();
}

/// The rules: above zero, and below `timeout`, which would end the call first.
#[test]
fn the_rules_refuse_a_duration_timeout_would_cut_short() {
    let refused = Breaker::builder("slow::rules")
        .timeout(ms(100))
        .slow_call_duration(ms(100))
        .build()
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "breaker `slow::rules`: `slow_call_duration` (100ms) must be shorter than `timeout` \
         (100ms), which ends a call first"
    );
    let refused = Breaker::builder("slow::rules")
        .slow_call_duration(Duration::ZERO)
        .build()
        .unwrap_err();
    assert!(refused
        .to_string()
        .contains("`slow_call_duration` must be above zero"));
    assert!(Breaker::builder("slow::rules")
        .timeout(ms(100))
        .slow_call_duration(ms(50))
        .build()
        .is_ok());
}

#[breaker(
    name = "slow::blocking",
    error_threshold = 1,
    slow_call_duration = "5ms"
)]
fn blocking(wait: u64) -> Result<u64, BoxError> {
    std::thread::sleep(ms(wait));
    Ok(wait)
}

/// A blocking fn's call is measured from its start.
#[test]
fn a_blocking_call_is_measured_from_its_start() {
    assert_eq!(blocking(0).unwrap(), 0);
    let site = resiliency::breaker::get("slow::blocking").unwrap();
    assert_eq!(site.state(), State::Closed);
    assert_eq!(blocking(20).unwrap(), 20);
    assert_eq!(site.state(), State::Open);
}

/// With no tokio time driver (and outside any runtime), slow calls are still told: no timer is
/// needed, only the clock.
#[test]
fn a_runtime_without_a_time_driver_tells_slow_calls() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let breaker = Breaker::builder("slow::no_driver")
        .error_threshold(1)
        .slow_call_duration(ms(5))
        .build()
        .unwrap();
    runtime.block_on(async {
        let out = breaker.call(async {
            tokio::task::yield_now().await;
            std::thread::sleep(ms(20));
            Ok::<_, BoxError>(3)
        });
        assert_eq!(out.await.unwrap(), 3);
    });
    assert_eq!(breaker.state(), State::Open);
}

// ---------------------------------------------------------------------------------------------
// `slow_call_rate`: slow calls with a rate of their own (rate rule)

fn slow_rate_breaker(name: &str) -> Breaker {
    Breaker::builder(name)
        .failure_rate(0.5)
        .min_calls(4)
        .slow_call_duration(ms(50))
        .slow_call_rate(0.75)
        .build()
        .unwrap()
}

async fn call_taking(breaker: &Breaker, took: u64) -> Result<u64, BoxError> {
    breaker
        .call(async move {
            sleep(ms(took)).await;
            Ok(took)
        })
        .await
}

/// Slow successes are successes: two slow of four stay closed (the failure rate of 0.5 would
/// have opened it), three of four reach `slow_call_rate` and open it.
#[tokio::test(start_paused = true)]
async fn slow_calls_open_the_breaker_at_their_own_rate() {
    let breaker = slow_rate_breaker("slow::rate_of_their_own");
    for took in [1, 60, 1, 60] {
        call_taking(&breaker, took).await.unwrap();
    }
    let snapshot = breaker.snapshot();
    assert_eq!(snapshot.state, State::Closed);
    assert_eq!(snapshot.recent_errors, 0, "slow successes are not errors");
    assert_eq!(snapshot.recent_calls, Some(4));
    assert_eq!(snapshot.recent_slow, 2);
    // 3 slow of 5: 0.6, below 0.75; 4 of 6: 0.67; 5 of 7: 0.71; 6 of 8: 0.75, open.
    for _ in 0..3 {
        call_taking(&breaker, 60).await.unwrap();
        assert_eq!(breaker.state(), State::Closed);
    }
    call_taking(&breaker, 60).await.unwrap();
    assert_eq!(breaker.state(), State::Open);
    let refused = call_taking(&breaker, 1).await.unwrap_err();
    assert!(refused
        .downcast_ref::<resiliency::Rejected>()
        .unwrap()
        .is_circuit_open());
}

/// Errors keep their own rate beside the slow calls'.
#[tokio::test(start_paused = true)]
async fn errors_still_open_it_at_the_failure_rate() {
    let breaker = slow_rate_breaker("slow::errors_too");
    for took in [1, 60, 1] {
        call_taking(&breaker, took).await.unwrap();
    }
    let _ = breaker
        .call(async { Err::<(), BoxError>("down".into()) })
        .await;
    assert_eq!(breaker.state(), State::Closed, "1 error of 4");
    let _ = breaker
        .call(async { Err::<(), BoxError>("down".into()) })
        .await;
    let _ = breaker
        .call(async { Err::<(), BoxError>("down".into()) })
        .await;
    assert_eq!(breaker.state(), State::Open, "3 errors of 6: 0.5");
}

/// Under the count rule, the snapshot reports slow calls apart, and they count as errors too.
#[tokio::test(start_paused = true)]
async fn the_count_rule_reports_slow_calls_apart() {
    let breaker = Breaker::builder("slow::count_snapshot")
        .error_threshold(3)
        .slow_call_duration(ms(50))
        .build()
        .unwrap();
    call_taking(&breaker, 60).await.unwrap();
    call_taking(&breaker, 1).await.unwrap();
    let snapshot = breaker.snapshot();
    assert_eq!(snapshot.recent_slow, 1);
    assert_eq!(
        snapshot.recent_errors, 1,
        "a slow call is a failure under the count rule"
    );
}

#[tokio::test(start_paused = true)]
async fn slow_call_rate_by_name() {
    let _serial = serial();
    let breaker = Breaker::builder("slow::rate_by_name")
        .failure_rate(0.5)
        .min_calls(2)
        .slow_call_duration(ms(50))
        .register()
        .unwrap();
    settings::set(Policy::Breaker, "slow::rate_by_name", "slow_call_rate", 1.0).unwrap();
    let effective = settings::effective(Policy::Breaker, "slow::rate_by_name").unwrap();
    assert!(effective
        .iter()
        .any(|e| e.setting == "slow_call_rate" && e.value.is_some()));
    call_taking(&breaker, 60).await.unwrap();
    call_taking(&breaker, 1).await.unwrap();
    assert_eq!(breaker.state(), State::Closed, "half slow: below 1.0");
    let refused = settings::set(Policy::Breaker, "slow::rate_by_name", "slow_call_rate", 1.5);
    assert!(refused.unwrap_err().to_string().contains("(0, 1]"));
    settings::unset(Policy::Breaker, "slow::rate_by_name", "slow_call_rate").unwrap();
}

#[test]
fn slow_call_rate_rules() {
    let needs = |builder: resiliency::BreakerBuilder| builder.build().unwrap_err().to_string();
    let count_rule = needs(
        Breaker::builder("slow::rules")
            .slow_call_duration(ms(50))
            .slow_call_rate(0.5),
    );
    assert!(
        count_rule.contains("belongs to the rate rule"),
        "{count_rule}"
    );
    let no_duration = needs(
        Breaker::builder("slow::rules")
            .failure_rate(0.5)
            .slow_call_rate(0.5),
    );
    assert!(
        no_duration.contains("needs `slow_call_duration`"),
        "{no_duration}"
    );
    let out_of_range = needs(
        Breaker::builder("slow::rules")
            .failure_rate(0.5)
            .slow_call_duration(ms(50))
            .slow_call_rate(0.0),
    );
    assert!(out_of_range.contains("(0, 1]"), "{out_of_range}");
}

/// A slow error is one failed call, not a slow one, with or without `slow_call_rate`.
#[tokio::test(start_paused = true)]
async fn a_slow_error_is_one_failed_call() {
    for (name, slow_rate) in [
        ("slow::slow_error.plain", None),
        ("slow::slow_error.rate", Some(0.5)),
    ] {
        let mut builder = Breaker::builder(name)
            .failure_rate(0.5)
            .min_calls(10)
            .slow_call_duration(ms(50));
        if let Some(rate) = slow_rate {
            builder = builder.slow_call_rate(rate);
        }
        let breaker = builder.build().unwrap();
        let slow_error = breaker.call(async {
            sleep(ms(60)).await;
            Err::<(), BoxError>("down".into())
        });
        assert!(slow_error.await.is_err());
        let snapshot = breaker.snapshot();
        assert_eq!(
            (
                snapshot.recent_calls,
                snapshot.recent_errors,
                snapshot.recent_slow
            ),
            (Some(1), 1, 0),
            "{name}"
        );
    }
}

/// A slow-rate breaker on a blocking fn: slow successes are successes, measured from the call's
/// start, until they reach the rate.
#[test]
fn a_blocking_call_counts_toward_the_slow_rate() {
    let breaker = Breaker::builder("slow::rate_blocking")
        .failure_rate(0.5)
        .min_calls(3)
        .slow_call_duration(ms(5))
        .slow_call_rate(0.5)
        .build()
        .unwrap();
    let call = |wait: u64| {
        breaker.call_blocking(|| {
            std::thread::sleep(ms(wait));
            Ok::<_, BoxError>(wait)
        })
    };
    assert_eq!(call(0).unwrap(), 0);
    assert_eq!(call(20).unwrap(), 20);
    let snapshot = breaker.snapshot();
    assert_eq!(snapshot.state, State::Closed, "2 calls: below min_calls");
    assert_eq!(
        (
            snapshot.recent_calls,
            snapshot.recent_errors,
            snapshot.recent_slow
        ),
        (Some(2), 0, 1)
    );
    assert_eq!(call(20).unwrap(), 20);
    assert_eq!(breaker.state(), State::Open, "2 slow of 3 calls");
}

/// `RESILIENCY_BREAKER__<SITE>__SLOW_CALL_RATE` sets it on a live breaker.
#[tokio::test(start_paused = true)]
async fn slow_call_rate_from_the_environment() {
    let _serial = serial();
    let breaker = Breaker::builder("slow::env")
        .failure_rate(0.5)
        .min_calls(2)
        .slow_call_duration(ms(50))
        .register()
        .unwrap();
    let variable = "RESILIENCY_BREAKER__SLOW__ENV__SLOW_CALL_RATE";
    std::env::set_var(variable, "0.5");
    settings::load_env().unwrap();
    let effective = settings::effective(Policy::Breaker, "slow::env").unwrap();
    assert!(effective
        .iter()
        .any(|e| e.setting == "slow_call_rate" && e.value.is_some()));
    call_taking(&breaker, 1).await.unwrap();
    call_taking(&breaker, 60).await.unwrap();
    assert_eq!(breaker.state(), State::Open, "1 slow of 2: 0.5");
    std::env::remove_var(variable);
    settings::load_env().unwrap();
    let effective = settings::effective(Policy::Breaker, "slow::env").unwrap();
    assert!(effective
        .iter()
        .any(|e| e.setting == "slow_call_rate" && e.value.is_none()));
}

/// The state change says why the breaker opened: slow calls at `slow_call_rate`, errors, or a
/// failed probe (a slow one too).
#[tokio::test(start_paused = true)]
async fn the_state_change_says_why_it_opened() {
    use resiliency::breaker::OpenCause;
    use std::sync::{Arc, Mutex};

    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let id = resiliency::breaker::subscribe(move |change| {
        if change.name.starts_with("slow::cause") && change.to == State::Open {
            log.lock()
                .unwrap()
                .push((change.name.to_string(), change.cause, change.to_string()));
        }
    });
    let slow = slow_rate_breaker("slow::cause.slow");
    for _ in 0..4 {
        call_taking(&slow, 60).await.unwrap();
    }
    let failing = slow_rate_breaker("slow::cause.errors");
    for _ in 0..4 {
        let _ = failing
            .call(async { Err::<(), BoxError>("down".into()) })
            .await;
    }
    tokio::time::advance(failing.error_timeout()).await;
    call_taking(&failing, 60).await.unwrap();
    resiliency::breaker::unsubscribe(id);
    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        [
            (
                "slow::cause.slow".to_string(),
                Some(OpenCause::SlowCalls),
                "slow::cause.slow: closed -> open (slow_calls)".to_string()
            ),
            (
                "slow::cause.errors".to_string(),
                Some(OpenCause::Errors),
                "slow::cause.errors: closed -> open (errors)".to_string()
            ),
            (
                "slow::cause.errors".to_string(),
                Some(OpenCause::ProbeFailed),
                "slow::cause.errors: half-open -> open (probe_failed)".to_string()
            ),
        ]
    );
}
