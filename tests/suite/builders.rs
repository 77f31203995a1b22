//! `RaceRetry::builder` and `TooBusy::builder` through the facade: they refuse what the
//! attributes refuse (values the `const` constructors behind the attributes' expansions would
//! clamp or accept unchecked), with one message per rule broken, and build what they accept.

use std::sync::LazyLock;
use std::time::Duration;

use resiliency::race_retry::{After, RaceRetry, RaceRetryBuilder, MAX_RETRIES};
use resiliency::too_busy::TooBusy;
use resiliency::{ConfigError, Rejected};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn race() -> RaceRetryBuilder {
    RaceRetry::builder("builders.race")
        .after(After::Fixed(ms(150)))
        .total(ms(450))
}

#[track_caller]
fn refused(built: Result<impl std::fmt::Debug, ConfigError>, message: &str) {
    let error = built.expect_err("the builder accepted invalid options");
    let _: &dyn std::error::Error = &error;
    assert_eq!(error.to_string(), message);
}

#[test]
fn race_retry_refuses_retries_out_of_range() {
    for (retries, why) in [
        (
            0,
            "with none, bound the call with `tokio::time::timeout` instead",
        ),
        (
            MAX_RETRIES + 1,
            "each one multiplies the load an outage puts on the callee",
        ),
        (
            u32::MAX,
            "each one multiplies the load an outage puts on the callee",
        ),
    ] {
        refused(
            race().retries(retries).build(),
            &format!(
                "race_retry `builders.race`: `retries` is the number of extra attempts on top of \
                 the first, from 1 to 16, such as `retries = 2`; {why}"
            ),
        );
    }
    assert_eq!(
        race().retries(MAX_RETRIES).build().unwrap().retries(),
        MAX_RETRIES
    );
    assert_eq!(race().build().unwrap().retries(), 2);
}

#[test]
fn race_retry_refuses_budget_shares_out_of_range() {
    for share in [f64::NAN, -1.0, 0.0, 1e-300, 0.0009, 1.5, f64::INFINITY] {
        refused(
            race().budget(share).build(),
            &format!(
                "race_retry `builders.race`: `budget` is the share of load extra attempts may \
                 add: from 0.001 to 1, got {share}, such as `budget = 0.1` (the default), or \
                 `budget = \"off\"` for no budget"
            ),
        );
    }
    for share in [0.001, 0.2, 1.0] {
        assert_eq!(race().budget(share).build().unwrap().budget(), Some(share));
    }
    assert_eq!(race().build().unwrap().budget(), Some(0.1));
    assert_eq!(race().no_budget().build().unwrap().budget(), None);
    // One setting: the last call says what it is.
    assert_eq!(
        race().budget(0.2).no_budget().build().unwrap().budget(),
        None
    );
    assert_eq!(
        race().no_budget().budget(0.2).build().unwrap().budget(),
        Some(0.2)
    );
}

#[test]
fn race_retry_refuses_backoff_factors_below_one_or_infinite() {
    for factor in [0.5, 0.0, -2.0, f64::NAN, f64::INFINITY] {
        refused(
            race().backoff_factor(factor).build(),
            &format!(
                "race_retry `builders.race`: `backoff_factor` is how much each wait's bound grows \
                 over the one before: a number of at least 1, got {factor}, such as \
                 `backoff_factor = 2` (the default; 1 keeps every bound at `backoff`)"
            ),
        );
    }
    // A factor of 1 keeps every bound at `backoff`.
    let flat = race().backoff(ms(20)).backoff_factor(1.0).build().unwrap();
    assert_eq!([0, 1, 2].map(|n| flat.backoff_bound(n)), [ms(20); 3]);
}

#[test]
fn race_retry_refuses_what_the_attribute_refuses() {
    let cases: [(RaceRetryBuilder, &str); 9] = [
        (
            RaceRetry::builder("builders.race"),
            "`total` is required: one deadline over every attempt, such as \
             `#[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]`",
        ),
        (
            race().total(Duration::ZERO),
            "`total` must be above zero, e.g. `total = \"450ms\"`",
        ),
        (
            race().after(After::Fixed(ms(450))),
            "`after` must be below `total` (450ms): no attempt after the first could start \
             before the deadline",
        ),
        (
            race().after(After::Percentile(1.0)),
            "`after`: a percentile lies strictly between p0 and p100 (a quantile strictly \
             between 0 and 1, got 1), such as \"p95\"",
        ),
        (
            race().each(ms(450)),
            "`each` must be below `total` (450ms), or it bounds nothing; leave it out to let one \
             attempt use the whole deadline",
        ),
        (
            race().each(Duration::ZERO),
            "`each` must be above zero, e.g. `each = \"450ms\"`",
        ),
        (
            race().backoff(Duration::ZERO),
            "`backoff` must be above zero; to start the next attempt at once after a failure, \
             write `backoff = \"off\"`",
        ),
        (
            race().backoff(ms(20)).backoff_max(ms(10)),
            "`backoff_max` (10ms) is below `backoff` (20ms), the bound of the first wait: raise \
             `backoff_max`, or lower `backoff`",
        ),
        (
            race().no_backoff().backoff_max(ms(10)),
            "`backoff_max` does nothing with `backoff = \"off\"` (the next attempt starts at once \
             after a failure); remove one of them",
        ),
    ];
    for (builder, message) in cases {
        refused(
            builder.build(),
            &format!("race_retry `builders.race`: {message}"),
        );
    }
    // Every rule broken is named at once.
    refused(
        race().retries(0).each(Duration::ZERO).build(),
        "race_retry `builders.race`: `retries` is the number of extra attempts on top of the \
         first, from 1 to 16, such as `retries = 2`; with none, bound the call with \
         `tokio::time::timeout` instead; `each` must be above zero, e.g. `each = \"450ms\"`",
    );
}

static BUILT: LazyLock<RaceRetry> = LazyLock::new(|| {
    race()
        .retries(3)
        .each(ms(300))
        .backoff(ms(10))
        .backoff_max(ms(40))
        .build()
        .unwrap()
});

#[tokio::test(start_paused = true)]
async fn a_built_race_retry_has_its_settings_and_runs() {
    assert_eq!(BUILT.name(), "builders.race");
    assert_eq!(BUILT.retries(), 3);
    assert_eq!(BUILT.total(), ms(450));
    assert_eq!(BUILT.each(), Some(ms(300)));
    assert_eq!(BUILT.after(), ms(150));
    assert_eq!(
        [0, 1, 2, 3].map(|n| BUILT.backoff_bound(n)),
        [ms(10), ms(20), ms(40), ms(40)]
    );
    let answer: Result<u32, Rejected> = BUILT.run(|| async { Ok(7) }).await;
    assert_eq!(answer.unwrap(), 7);
}

#[test]
fn too_busy_refuses_what_the_attribute_refuses() {
    let b = || TooBusy::builder("builders.busy");
    refused(
        b().max_in_flight(0).build(),
        "too_busy `builders.busy`: `max_in_flight` must be at least 1 (leave it out for no \
         limit), e.g. `max_in_flight = 256`, or `max_in_flight = \"auto\"` to learn it",
    );
    refused(
        b().max_in_flight_auto().auto_min(8).auto_max(4).build(),
        "too_busy `builders.busy`: `auto_max` (4) must be at least `auto_min` (8)",
    );
    refused(
        b().max_lag(Duration::ZERO).build(),
        "too_busy `builders.busy`: `max_lag` must be above zero, e.g. `max_lag = \"450ms\"`",
    );
    refused(
        b().max_latency(Duration::ZERO).build(),
        "too_busy `builders.busy`: `max_latency` must be above zero, e.g. `max_latency = \"450ms\"`",
    );
    refused(
        TooBusy::builder("").build(),
        "too_busy ``: `name` must not be empty",
    );
    refused(
        RaceRetry::builder("").total(ms(1)).build(),
        "race_retry ``: `name` must not be empty",
    );
}

static CAPPED: LazyLock<TooBusy> = LazyLock::new(|| {
    TooBusy::builder("builders.capped")
        .max_in_flight(1)
        .build()
        .unwrap()
});

#[tokio::test]
async fn a_built_too_busy_has_its_settings_and_sheds() {
    assert_eq!(CAPPED.name(), "builders.capped");
    let slow = || {
        CAPPED.call(async {
            tokio::time::sleep(ms(20)).await;
            Ok::<_, Rejected>(())
        })
    };
    let (a, b) = tokio::join!(slow(), slow());
    assert!(a.is_ok());
    let refused = b.unwrap_err();
    assert!(refused.is_too_busy());
    assert_eq!(refused.name(), "builders.capped");
    assert_eq!(CAPPED.in_flight(), 0);
}
