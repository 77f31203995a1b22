//! A site's first call checks its options' rules once, and once more for the overrides that
//! reach it.

use std::time::Duration;

use super::{BreakerSite, KeyedSite, RaceSite, TooBusySite};
use crate::options::checks::counted;
use crate::settings::{self, Policy};

#[test]
fn a_breaker_site_checks_its_rules_once() {
    static SITE: BreakerSite =
        BreakerSite::new(|| "private.checks.breaker", |b| b.error_threshold(2));
    assert_eq!(
        counted(|| {
            let _ = SITE.breaker();
        }),
        1
    );
    assert_eq!(
        counted(|| {
            let _ = SITE.breaker();
        }),
        0
    );
    static KEYED: KeyedSite = KeyedSite::new(|| "private.checks.keyed", |b| b.error_threshold(2));
    assert_eq!(
        counted(|| {
            let _ = KEYED.breaker("a");
        }),
        1
    );
    assert_eq!(
        counted(|| {
            let _ = KEYED.breaker("b");
        }),
        0
    );
}

#[test]
fn a_guard_site_checks_its_rules_once() {
    static SITE: TooBusySite =
        TooBusySite::new(|| "private.checks.too_busy", |b| b.max_in_flight(8));
    assert_eq!(
        counted(|| {
            let _ = SITE.guard();
        }),
        1
    );
    assert_eq!(
        counted(|| {
            let _ = SITE.guard();
        }),
        0
    );
}

#[test]
fn a_race_site_checks_its_rules_once() {
    static SITE: RaceSite = RaceSite::new(
        || "private.checks.race_retry",
        |b| b.retries(1).total(Duration::from_secs(1)),
    );
    assert_eq!(
        counted(|| {
            let _ = SITE.race();
        }),
        1
    );
    assert_eq!(
        counted(|| {
            let _ = SITE.race();
        }),
        0
    );
}

/// An override that reaches the site at its set-up is checked with the site's other options:
/// one more check, and the override is in force.
#[test]
fn an_override_at_set_up_is_checked_once_with_the_options() {
    settings::set(
        Policy::Breaker,
        "private.checks.overridden",
        "error_threshold",
        7,
    )
    .unwrap();
    static SITE: BreakerSite =
        BreakerSite::new(|| "private.checks.overridden", |b| b.error_threshold(2));
    assert_eq!(
        counted(|| {
            let _ = SITE.breaker();
        }),
        2
    );
    let in_force = settings::effective(Policy::Breaker, "private.checks.overridden").unwrap();
    let threshold = in_force
        .iter()
        .find(|e| e.setting == "error_threshold")
        .unwrap();
    assert_eq!(threshold.value, Some(7.into()));
}
