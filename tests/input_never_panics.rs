//! Input from outside the process never panics or hangs: `Retry-After` headers, keys taken from
//! requests, settings from code, files (TOML, JSON) and the environment give a value or a clear
//! error for arbitrary bytes, and the values they give are used (calls through the breaker,
//! race and guard they reach) without a panic either.
//!
//! Each reader gets arbitrary bytes or text, and near-valid input: a generator that builds almost
//! valid dates, durations, names and files and then mutates them, so that the deep branches are
//! reached. Settings are process-wide, so the tests that change them or call a registered site
//! run one at a time (`serial`), on sites of this file (`input_never_panics::...`), and leave the
//! file, environment and code layers as they found them. Time is tokio's paused clock; each call that could wait runs under a timeout of a
//! virtual day, so a hang fails the test rather than stalling it.
#![cfg(all(feature = "tower", feature = "toml"))]

mod support;

use std::convert::Infallible;
use std::ffi::OsString;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderValue, Request, Response, StatusCode};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use resiliency::race_retry::RaceRetry;
use resiliency::rate_limit::{Rate, RateLimit};
use resiliency::retry_hint::parse_retry_after;
use resiliency::settings::{self, Overrides, Policy, Value, ALL};
use resiliency::timeout::Timeout;
use resiliency::too_busy::TooBusy;
use resiliency::tower::{authority_of, BreakerLayer};
use resiliency::{Breaker, Rejected};
use support::{paused_runtime, serial, BoxError};
use tower::{Layer, ServiceExt};

/// A runner of `cases` cases, with no file of past failures (a failure prints its shrunk input:
/// keep it as a plain `#[test]`).
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// How many cases reached a branch, and how many ran: a generator that stops reaching the deep
/// branches (every value refused, every file malformed) fails its test rather than passing
/// without testing them.
#[derive(Default)]
struct Reached {
    cases: AtomicU32,
    deep: AtomicU32,
}

impl Reached {
    fn case(&self, deep: bool) {
        self.cases.fetch_add(1, SeqCst);
        self.deep.fetch_add(u32::from(deep), SeqCst);
    }

    /// At least `percent` of the cases reached the branch.
    fn at_least(&self, percent: u32, branch: &str) {
        let (cases, deep) = (self.cases.load(SeqCst), self.deep.load(SeqCst));
        assert!(
            deep * 100 >= cases * percent,
            "{deep} of {cases} cases reached {branch}, fewer than {percent}%"
        );
    }
}

/// Longer than any call of these tests takes on the paused clock, unless it hangs.
const HANG: Duration = Duration::from_secs(86_400);

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/// Numbers as people, files and attackers write them: in and out of every range, signed, with
/// exponents, NaN, infinities, digits of other scripts.
fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
        any::<f64>().prop_map(|x| format!("{x:e}")),
        "[0-9]{1,25}(\\.[0-9]{0,25})?",
        select(vec![
            "0",
            "-0",
            "00",
            "1e309",
            "1e-320",
            "1E3",
            "NaN",
            "nan",
            "inf",
            "-inf",
            "+1",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "4294967295",
            "4294967296",
            "9223372036854775808",
            "340282366920938463463374607431768211456",
            ".",
            "1.",
            ".5",
            "1..2",
            "0x10",
            "1_000",
            "\u{661}\u{662}",
            "\u{ff11}",
        ])
        .prop_map(String::from),
    ]
}

/// Durations as the attribute's syntax writes them, and near misses: any number with a unit or
/// none, several parts in any order, spaces.
fn duration_text() -> impl Strategy<Value = String> {
    let unit = select(vec![
        "ns", "us", "µs", "ms", "s", "m", "h", "", "d", "S", "MS", "sec", " s", "  ms",
    ]);
    prop::collection::vec((number_text(), unit, select(vec!["", " ", "\t"])), 1..4).prop_map(
        |parts| {
            parts
                .into_iter()
                .map(|(n, u, gap)| format!("{n}{u}{gap}"))
                .collect()
        },
    )
}

/// The words settings take, and near misses.
fn word_text() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "off", "OFF", " off ", "Off\n", "of", "auto", "AUTO", " auto", "p95", "p0", "p100",
            "p99.9", "p-1", "pNaN", "pinf", "p1e309", "p", "P95", "p 95", " p50 ", "on", "true",
            "", " ", "*",
        ])
        .prop_map(String::from),
        number_text().prop_map(|n| format!("p{n}")),
    ]
}

/// Texts that some setting takes: short durations, small counts, shares, words.
fn plausible_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[1-9][0-9]{0,2}(ms|s)",
        "[1-9][0-9]?",
        "0\\.[1-9]",
        select(vec![
            "off", "auto", "p95", "p50", "2.0", "1.5s", "1m30s", "250us", "100/s", "10/100ms",
            "0/s", "5/0s"
        ])
        .prop_map(String::from),
    ]
}

/// Texts of each kind settings take: counts, shares, factors, durations, words, rates.
const SAMPLES: [&str; 16] = [
    "1", "3", "10", "0.5", "0.9", "2.0", "50ms", "1s", "3s", "30s", "off", "auto", "p95", "p50",
    "100/s", "5/m",
];

/// Each policy's setting and the [`SAMPLES`] of its kind.
type Samples = std::collections::BTreeMap<(Policy, &'static str), Vec<&'static str>>;

/// The [`SAMPLES`] that `settings::set` takes for each setting on a site that is not set up
/// (where only the value's kind is checked, not the rules between settings).
static TAKEN: LazyLock<Samples> = LazyLock::new(|| {
    let site = "input_never_panics::kinds";
    let mut taken = Samples::new();
    for policy in Policy::ALL {
        for &setting in policy.settings() {
            let samples: Vec<&str> = SAMPLES
                .into_iter()
                .filter(|sample| settings::set(policy, site, setting, *sample).is_ok())
                .collect();
            settings::unset(policy, site, setting).unwrap();
            assert!(!samples.is_empty(), "no sample is a {policy} `{setting}`");
            taken.insert((policy, setting), samples);
        }
    }
    taken
});

/// A text for `setting` of `policy` near one it takes: a sample of its kind, now and then with
/// its number replaced by any other; or any text at all.
fn near_valid(policy: Policy, setting: &'static str) -> BoxedStrategy<String> {
    let samples = TAKEN[&(policy, setting)].clone();
    let number = prop_oneof![(0..1000u32).prop_map(|n| n.to_string()), number_text()];
    let near =
        (select(samples), prop::option::weighted(0.25, number)).prop_map(|(sample, number)| {
            let unit = sample.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            match number {
                Some(n) if unit.len() < sample.len() => format!("{n}{unit}"),
                _ => sample.to_owned(),
            }
        });
    prop_oneof![6 => near, 1 => setting_text()].boxed()
}

/// Any text a setting could be given.
fn setting_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => plausible_text(),
        3 => duration_text(),
        2 => number_text(),
        2 => word_text(),
        1 => "\\PC{0,24}",
        1 => any::<String>(),
    ]
}

/// Durations at and near the ends of their range.
fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        any::<u64>().prop_map(Duration::from_nanos),
        (any::<u64>(), 0..1_000_000_000u32).prop_map(|(s, n)| Duration::new(s, n)),
        select(vec![
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::MAX,
            Duration::from_secs(u64::MAX),
            Duration::from_nanos(u64::MAX),
        ]),
    ]
}

/// Any [`Value`] code, a file or a variable could give.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => setting_text().prop_map(Value::Text),
        1 => any::<i64>().prop_map(Value::Int),
        1 => select(vec![0, 1, -1, i64::MAX, i64::MIN, u32::MAX as i64 + 1]).prop_map(Value::Int),
        1 => any::<f64>().prop_map(Value::Float),
        1 => select(vec![f64::NAN, f64::INFINITY, -0.0, 0.5, 1e308, 1e-320, f64::MAX])
            .prop_map(Value::Float),
        1 => any_duration().prop_map(Value::Duration),
        2 => (1..100i64).prop_map(Value::Int),
        1 => (0.05..1.0f64).prop_map(Value::Float),
        1 => (1..10_000u64).prop_map(|ms| Value::Duration(Duration::from_millis(ms))),
    ]
}

/// One edit of `text` at a char boundary: a byte string that is almost what the generator
/// built.
#[derive(Clone, Debug)]
enum Edit {
    Insert(Index, char),
    Delete(Index),
    Replace(Index, char),
}

fn edit() -> impl Strategy<Value = Edit> {
    let c = prop_oneof![
        any::<char>(),
        select(vec![
            ' ', '"', '\'', '[', ']', '.', '=', '\n', ':', ',', '+', '-', '0', '9', '\\', '#'
        ]),
    ];
    prop_oneof![
        (any::<Index>(), c.clone()).prop_map(|(i, c)| Edit::Insert(i, c)),
        any::<Index>().prop_map(Edit::Delete),
        (any::<Index>(), c).prop_map(|(i, c)| Edit::Replace(i, c)),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    match *edit {
        Edit::Insert(i, c) => chars.insert(i.index(chars.len() + 1), c),
        Edit::Delete(i) if !chars.is_empty() => {
            chars.remove(i.index(chars.len()));
        }
        Edit::Replace(i, c) if !chars.is_empty() => {
            let at = i.index(chars.len());
            chars[at] = c;
        }
        _ => {}
    }
    chars.into_iter().collect()
}

// ---------------------------------------------------------------------------------------------
// The sites settings reach
// ---------------------------------------------------------------------------------------------

const BREAKER: &str = "input_never_panics::breaker";
const RACE: &str = "input_never_panics::race";
const BUSY: &str = "input_never_panics::busy";
const TIMEOUT: &str = "input_never_panics::timeout";
const RATE_LIMIT: &str = "input_never_panics::rate_limit";

/// The paused runtimes the sites' calls run on, for every test: one for the breaker and the race,
/// one for the guard (whose lag monitor wakes every few milliseconds of the paused clock, which
/// the other's long waits would step through).
struct Runtimes {
    main: tokio::runtime::Runtime,
    busy: tokio::runtime::Runtime,
}

static RUNTIMES: LazyLock<Runtimes> = LazyLock::new(|| Runtimes {
    main: paused_runtime(),
    busy: paused_runtime(),
});

/// One live site of each policy, registered once (on the paused clock of [`RUNTIMES`]).
struct Sites {
    breaker: Arc<Breaker>,
    race: &'static RaceRetry,
    busy: &'static TooBusy,
    timeout: &'static Timeout,
    rate_limit: &'static RateLimit,
}

static SITES: LazyLock<Sites> = LazyLock::new(|| {
    let _enter = RUNTIMES.main.enter();
    Sites {
        breaker: Breaker::builder(BREAKER)
            .error_threshold(2)
            .error_timeout(Duration::from_secs(5))
            .register()
            .unwrap(),
        race: RaceRetry::builder(RACE)
            .retries(2)
            .after(Duration::from_millis(100))
            .total(Duration::from_secs(2))
            .register()
            .unwrap(),
        busy: TooBusy::builder(BUSY).max_in_flight(8).register().unwrap(),
        timeout: Timeout::builder(TIMEOUT)
            .total(Duration::from_secs(2))
            .register()
            .unwrap(),
        rate_limit: RateLimit::builder(RATE_LIMIT)
            .rate(Rate::per_second(100))
            .register()
            .unwrap(),
    }
});

fn site_of(policy: Policy) -> &'static str {
    match policy {
        Policy::Breaker => BREAKER,
        Policy::RaceRetry => RACE,
        Policy::TooBusy => BUSY,
        Policy::Timeout => TIMEOUT,
        Policy::RateLimit => RATE_LIMIT,
    }
}

/// A call through each site, as the settings in force have it: a breaker's errors and a
/// success an hour later, a race whose first attempt fails, a guarded call. The breaker and the
/// guard answer within [`HANG`]; a race may be set to wait longer (a backoff of centuries), and is
/// then dropped, which must not panic either.
fn use_every_site() -> Result<(), TestCaseError> {
    let sites = &*SITES;
    RUNTIMES.main.block_on(async {
        let breaker = async {
            for fail in [true, true, false] {
                let _ = sites
                    .breaker
                    .call(async move {
                        if fail {
                            Err::<(), BoxError>("down".into())
                        } else {
                            Ok(())
                        }
                    })
                    .await;
            }
            let _ = sites.breaker.snapshot();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            let _ = sites.breaker.call(async { Ok::<(), BoxError>(()) }).await;
            let _ = sites.breaker.snapshot();
        };
        prop_assert!(
            tokio::time::timeout(HANG, breaker).await.is_ok(),
            "the breaker's calls hung"
        );
        let calls = AtomicU32::new(0);
        let race = sites.race.run(|| {
            let n = calls.fetch_add(1, SeqCst);
            async move {
                if n == 0 {
                    Err::<u32, BoxError>("first".into())
                } else {
                    Ok(n)
                }
            }
        });
        let _ = tokio::time::timeout(HANG, race).await;
        // A time limit of any `total`: an answer after a minute is in time or cut off, never hung.
        let limited = sites.timeout.call(async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<(), BoxError>(())
        });
        prop_assert!(
            tokio::time::timeout(HANG, limited).await.is_ok(),
            "the time-limited call hung"
        );
        // A rate limit of any rate, burst and `max_wait`: calls admitted, refused, or waiting
        // (a `max_wait` of centuries), then dropped, which must not panic either.
        let limited = async {
            for _ in 0..3 {
                let _ = sites
                    .rate_limit
                    .call(async { Ok::<(), BoxError>(()) })
                    .await;
            }
            let _ = sites.rate_limit.available();
        };
        let _ = tokio::time::timeout(HANG, limited).await;
        Ok(())
    })?;
    RUNTIMES.busy.block_on(async {
        let busy = sites.busy.call(async { Ok::<(), BoxError>(()) });
        prop_assert!(
            tokio::time::timeout(HANG, busy).await.is_ok(),
            "the guarded call hung"
        );
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// 1. Retry-After
// ---------------------------------------------------------------------------------------------

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A number of `width` digits in `range`, or something that is not: other widths, signs,
/// extremes, other scripts' digits.
fn date_part(width: usize, range: std::ops::RangeInclusive<u64>) -> impl Strategy<Value = String> {
    let (low, high) = (*range.start(), *range.end());
    prop_oneof![
        6 => (low..=high).prop_map(move |n| format!("{n:0width$}")),
        1 => (0..10u64.pow(width as u32)).prop_map(move |n| format!("{n:0width$}")),
        2 => number_text(),
        1 => (low..=high).prop_map(move |n| format!("+{n:0w$}", w = width - 1)),
        1 => (low..=high).prop_map(|n| n.to_string()),
        1 => select(vec!["300000000000", "\u{661}\u{662}", " 1", "1 ", ""]).prop_map(String::from),
    ]
}

/// An IMF-fixdate's parts: weekday, day, month, year, hour, minute, second.
type DateParts = (String, String, String, String, String, String, String);

fn date_parts() -> impl Strategy<Value = DateParts> {
    (
        prop_oneof![4 => select(WEEKDAYS.to_vec()).prop_map(String::from), 1 => "[A-Za-z]{0,4}"],
        date_part(2, 1..=31),
        prop_oneof![4 => select(MONTHS.to_vec()).prop_map(String::from), 1 => "[A-Za-z]{0,4}"],
        prop_oneof![
            2 => date_part(4, 1970..=9999),
            1 => select(vec!["1969", "0000", "10000", "18446744073709551615"]).prop_map(String::from),
        ],
        date_part(2, 0..=23),
        date_part(2, 0..=59),
        date_part(2, 0..=60),
    )
}

/// The seconds since 1970 of the date `parts` write when they are an IMF-fixdate as RFC 9110
/// gives its grammar (days 1 to 31 in any month, a leap second allowed, from 1970), counted day
/// by day: the model the reader is checked against.
fn model_date(parts: &DateParts) -> Option<u64> {
    let (weekday, day, month, year, hour, minute, second) = parts;
    let digits = |text: &str, width: usize, range: std::ops::RangeInclusive<u64>| {
        (text.len() == width && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
            .filter(|n| range.contains(n))
    };
    if !WEEKDAYS.contains(&weekday.as_str()) {
        return None;
    }
    let day = digits(day, 2, 1..=31)?;
    let month = MONTHS.iter().position(|m| m == month)? as u64;
    let year = digits(year, 4, 1970..=9999)?;
    let (hour, minute, second) = (
        digits(hour, 2, 0..=23)?,
        digits(minute, 2, 0..=59)?,
        digits(second, 2, 0..=60)?,
    );
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let mut days: u64 = (1970..year).map(|y| if leap(y) { 366 } else { 365 }).sum();
    let lengths = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    days += lengths[..month as usize].iter().sum::<u64>() + day - 1;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// The wait from now until `secs` since 1970, zero once past.
fn wait_until(secs: u64) -> Duration {
    (UNIX_EPOCH + Duration::from_secs(secs))
        .duration_since(SystemTime::now())
        .unwrap_or_default()
}

/// A `Retry-After` value in delta-seconds, and near misses.
fn delta_seconds() -> impl Strategy<Value = String> {
    (
        select(vec!["", "", "", " ", "+", "-", "0x", "\t"]),
        prop_oneof!["[0-9]{1,30}", number_text()],
        select(vec!["", "", "", " ", "s", ".0", "\t"]),
    )
        .prop_map(|(before, n, after)| format!("{before}{n}{after}"))
}

/// What `parse_retry_after` gives for the text of a value that is not an HTTP-date: the
/// delta-seconds of an all-digit value (as long as a `Duration` goes when past a u64), else
/// nothing.
fn model_delta(text: &str) -> Option<Duration> {
    let text = text.trim();
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| Duration::from_secs(text.parse().unwrap_or(u64::MAX)))
}

/// Bytes that may or may not make a header value: arbitrary, text, near-valid dates (edited or
/// not) and delta-seconds.
fn retry_after_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..48),
        "\\PC{0,40}".prop_map(String::into_bytes),
        (date_parts(), prop::option::of(edit())).prop_map(|(parts, edit)| {
            let (w, d, mo, y, h, mi, s) = parts;
            let text = format!("{w}, {d} {mo} {y} {h}:{mi}:{s} GMT");
            edit.map_or(text.clone(), |e| apply(&text, &e)).into_bytes()
        }),
        delta_seconds().prop_map(String::into_bytes),
    ]
}

/// Arbitrary bytes: every value `HeaderValue` takes reads as a wait or as nothing.
#[test]
fn retry_after_of_any_bytes_is_a_wait_or_nothing() {
    runner(1024)
        .run(&retry_after_bytes(), |bytes| {
            if let Ok(value) = HeaderValue::from_bytes(&bytes) {
                let _ = parse_retry_after(&value);
                let response = Response::builder()
                    .header(http::header::RETRY_AFTER, value)
                    .body(())
                    .unwrap();
                let _ = resiliency::RetryHint::retry_after(&response);
            }
            Ok(())
        })
        .unwrap();
}

/// Near-valid IMF-fixdates: read exactly when RFC 9110's grammar takes them (two digits for the
/// day and each part of the time, four for the year, ASCII digits only, no sign), as the wait
/// until the date a day-by-day count gives; nothing otherwise. Extreme years (12 digits, the
/// largest u64) are among them.
#[test]
fn retry_after_dates_are_read_as_the_grammar_says() {
    runner(1024)
        .run(&date_parts(), |parts| {
            let (w, d, mo, y, h, mi, s) = &parts;
            let text = format!("{w}, {d} {mo} {y} {h}:{mi}:{s} GMT");
            let Ok(value) = HeaderValue::from_str(&text) else {
                return Ok(());
            };
            let read = parse_retry_after(&value);
            match model_date(&parts) {
                Some(secs) => {
                    let read = read.ok_or_else(|| {
                        TestCaseError::fail(format!("{text:?} is a date, read as none"))
                    })?;
                    let expected = wait_until(secs);
                    prop_assert!(
                        read.abs_diff(expected) <= Duration::from_secs(2),
                        "{text:?}: read {read:?}, expected about {expected:?}"
                    );
                }
                None => prop_assert_eq!(read, model_delta(&text), "{:?}", text),
            }
            Ok(())
        })
        .unwrap();
}

/// Delta-seconds and near misses: an all-digit value is that many seconds (the largest wait
/// past a u64), anything else is nothing.
#[test]
fn retry_after_delta_seconds_are_digits_only() {
    runner(1024)
        .run(&delta_seconds(), |text| {
            let Ok(value) = HeaderValue::from_str(&text) else {
                return Ok(());
            };
            prop_assert_eq!(parse_retry_after(&value), model_delta(&text), "{:?}", text);
            Ok(())
        })
        .unwrap();
}

/// The known case: a year of 12 digits overflowed the clock's range.
#[test]
fn retry_after_of_a_twelve_digit_year_is_nothing() {
    for text in [
        "Wed, 21 Oct 300000000000 07:28:00 GMT",
        "Wed, 21 Oct 18446744073709551615 07:28:00 GMT",
        "Wed, 21 Oct +2015 07:28:00 GMT",
        "Wed, +1 Oct 2015 07:28:00 GMT",
    ] {
        assert_eq!(
            parse_retry_after(&HeaderValue::from_static(text)),
            None,
            "{text}"
        );
    }
}

/// Whatever a 503's `Retry-After` holds, a tower breaker that reads it opens for at least its
/// `error_timeout` and at most its `max_error_timeout` (exactly the hint between the two, for
/// delta-seconds), then half-opens and closes: no panic in the layer, the classifier or the
/// breaker.
#[test]
fn retry_after_of_any_bytes_through_a_tower_breaker() {
    let _serial = serial();
    let rt = paused_runtime();
    // The breaker's clock starts on the paused clock it runs on.
    let _enter = rt.enter();
    let (least, most) = (Duration::from_secs(1), Duration::from_secs(3600));
    let layer = BreakerLayer::new(
        Breaker::builder("input_never_panics::tower_hint")
            .error_threshold(1)
            .error_timeout(least)
            .backoff(2.0)
            .max_error_timeout(most),
    )
    .unwrap()
    .http_server_errors();
    // A request with a header value is answered 503 with it as `Retry-After`; one without, 200.
    let service = layer.layer(tower::service_fn(|hint: Option<HeaderValue>| async move {
        let mut response = Response::builder();
        response = match hint {
            Some(hint) => response
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header(http::header::RETRY_AFTER, hint),
            None => response.status(StatusCode::OK),
        };
        Ok::<_, Infallible>(response.body(()).unwrap())
    }));
    runner(512)
        .run(&retry_after_bytes(), |bytes| {
            let Ok(value) = HeaderValue::from_bytes(&bytes) else {
                return Ok(());
            };
            let delta = value.to_str().ok().and_then(model_delta);
            rt.block_on(async {
                let answer = service.clone().oneshot(Some(value)).await.unwrap();
                prop_assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
                let refused = service.clone().oneshot(None).await.unwrap_err();
                let open_for = support::rejected(&refused).retry_after().unwrap();
                prop_assert!(least <= open_for && open_for <= most, "{:?}", open_for);
                if let Some(delta) = delta {
                    prop_assert_eq!(open_for, delta.clamp(least, most));
                }
                tokio::time::advance(open_for).await;
                let answer = service.clone().oneshot(None).await.unwrap();
                prop_assert_eq!(answer.status(), StatusCode::OK, "the probe closes it");
                Ok(())
            })
        })
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// 2. Setting values from code
// ---------------------------------------------------------------------------------------------

/// A [`Value`]'s readers take any value: a duration, a finite number, a count, or none.
#[test]
fn values_read_as_what_they_are_or_as_nothing() {
    runner(1024)
        .run(&any_value(), |value| {
            let _ = value.duration();
            if let Some(x) = value.number() {
                prop_assert!(x.is_finite(), "{value:?} read as {x}");
            }
            if let (Value::Int(n), Some(count)) = (&value, value.count()) {
                prop_assert_eq!(i64::try_from(count).ok(), Some(*n));
            }
            let _ = value.is_off();
            let _ = (value.to_string(), format!("{value:?}"));
            Ok(())
        })
        .unwrap();
}

/// `settings::set` of any value for any setting of every policy, on a live site (so the rules
/// and the engines see what it parsed) and on a site not set up: `Ok` or a `SettingsError`, and
/// once `Ok`, calls through the site under the new value, then `unset`, which gives the
/// builder's value back. A setting no policy has is refused.
#[test]
fn settings_set_from_any_text_is_applied_or_refused() {
    let _serial = serial();
    LazyLock::force(&SITES);
    let setting = select(Policy::ALL.to_vec()).prop_flat_map(|policy| {
        select(policy.settings().to_vec()).prop_flat_map(move |name| {
            let value = prop_oneof![near_valid(policy, name).prop_map(Value::Text), any_value(),];
            (Just(policy), Just(name), value)
        })
    });
    let strategy = (
        setting,
        prop::option::weighted(0.1, "\\PC{0,12}"),
        "\\PC{0,16}",
    );
    let taken = Reached::default();
    runner(1024)
        .run(&strategy, |((policy, name, value), unknown, elsewhere)| {
            let setting = unknown.as_deref().unwrap_or(name);
            let known = policy.settings().contains(&setting);
            let site = site_of(policy);
            let set = settings::set(policy, site, setting, value.clone());
            taken.case(set.is_ok());
            match set {
                Ok(()) => {
                    prop_assert!(known, "{setting:?} is no {policy} setting, yet set");
                    use_every_site()?;
                    let _ = settings::effective(policy, site).map(|e| format!("{e:?}"));
                    settings::unset(policy, site, setting)
                        .map_err(|e| TestCaseError::fail(format!("unset: {e}")))?;
                }
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
            let elsewhere = format!("input_never_panics::nowhere::{elsewhere}");
            if settings::set(policy, &elsewhere, setting, value).is_ok() {
                let _ = settings::effective(policy, &elsewhere);
                settings::unset(policy, &elsewhere, setting)
                    .map_err(|e| TestCaseError::fail(format!("unset: {e}")))?;
            }
            Ok(())
        })
        .unwrap();
    taken.at_least(20, "a value in force");
}

// ---------------------------------------------------------------------------------------------
// 3. Settings files
// ---------------------------------------------------------------------------------------------

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A setting's value for a table of `policy`: near one its kind takes most of the time,
/// another policy's setting or no one's now and then; as `written` writes the setting and the
/// value, or (for values of kinds no setting takes) as `odd` holds them.
fn row(policy: Policy, written: Writer) -> BoxedStrategy<(String, String)> {
    let own = select(policy.settings().to_vec()).prop_flat_map(move |name| {
        (
            Just((written.key)(name)),
            near_valid(policy, name).prop_map(move |v| (written.value)(&v)),
        )
    });
    let any_policy: Vec<&str> = Policy::ALL
        .iter()
        .flat_map(|p| p.settings().iter().copied())
        .collect();
    let other_key = prop_oneof![
        select(any_policy).prop_map(String::from),
        "[a-z_]{1,12}",
        "\\PC{0,8}",
    ];
    let other = (other_key, setting_text())
        .prop_map(move |(k, v)| ((written.key)(&k), (written.value)(&v)));
    let odd = select(policy.settings().to_vec()).prop_flat_map(move |name| {
        (
            Just((written.key)(name)),
            select(written.odd).prop_map(String::from),
        )
    });
    prop_oneof![12 => own, 1 => other, 1 => odd].boxed()
}

/// How a file format writes a setting's name and a value (the text code would give), and values
/// of its kinds that no setting takes.
#[derive(Clone, Copy)]
struct Writer {
    key: fn(&str) -> String,
    value: fn(&str) -> String,
    odd: &'static [&'static str],
}

/// A number as a number, anything else as a string.
fn toml_literal(text: &str) -> String {
    let finite = text.parse::<f64>().is_ok_and(f64::is_finite);
    if text.parse::<i64>().is_ok() || (finite && text.contains('.') && !text.starts_with('.')) {
        text.to_owned()
    } else {
        toml_string(text)
    }
}

const TOML: Writer = Writer {
    key: |k| {
        let bare = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        if !k.is_empty() && k.bytes().all(bare) {
            k.to_owned()
        } else {
            toml_string(k)
        }
    },
    value: toml_literal,
    odd: &[
        "nan",
        "+inf",
        "-inf",
        "true",
        "false",
        "1979-05-27T07:32:00Z",
        "1979-05-27",
        "07:32:00",
        "[1, 2]",
        "[]",
        "{ a = 1 }",
        "\"\"\"multi\nline\"\"\"",
        "'literal'",
        "0x10",
        "0o7",
        "0b1",
        "1_000",
        "99999999999999999999",
        "1e309",
        "-0.0",
        "\"\"",
    ],
};

const JSON: Writer = Writer {
    key: |k| serde_json::Value::from(k).to_string(),
    value: |v| match v.parse::<i64>() {
        Ok(n) => n.to_string(),
        Err(_) => serde_json::Value::from(v).to_string(),
    },
    odd: &[
        "null",
        "true",
        "[]",
        "{}",
        "1e400",
        "-1e400",
        "18446744073709551616",
        "0.5",
    ],
};

/// The policy of a table and its name as a file writes it: a real one, now and then a
/// misspelt or an empty one.
fn table_policy() -> impl Strategy<Value = (Policy, String)> {
    let misspelt = prop_oneof![8 => Just(None), 1 => Just(Some("breakr")), 1 => Just(Some(""))];
    (select(Policy::ALL.to_vec()), misspelt).prop_map(|(policy, misspelt)| {
        let name = misspelt.map_or(policy.name().to_owned(), String::from);
        (policy, name)
    })
}

/// A site's name for a table of `policy`: its site in this file, every site, or another.
fn table_site(policy: Policy) -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just(site_of(policy).to_owned()),
        2 => Just(ALL.to_owned()),
        1 => "\\PC{0,12}",
    ]
}

/// One table of a settings file: policy, site, and settings with their values (each setting
/// once, as a file that parses has it), as `written` writes them.
fn table(written: Writer) -> impl Strategy<Value = (String, String, Vec<(String, String)>)> {
    table_policy().prop_flat_map(move |(policy, name)| {
        (
            Just(name),
            table_site(policy),
            prop::collection::vec(row(policy, written), 0..4).prop_map(|rows| {
                let rows: std::collections::BTreeMap<_, _> = rows.into_iter().collect();
                rows.into_iter().collect()
            }),
        )
    })
}

/// A near-valid settings file: tables of settings, then (some of the time) one edit.
fn toml_file() -> impl Strategy<Value = String> {
    let table = table(TOML).prop_map(|(policy, site, rows)| {
        let mut text = format!("[{}.{}]\n", (TOML.key)(&policy), toml_string(&site));
        for (key, value) in rows {
            text += &format!("{key} = {value}\n");
        }
        text
    });
    (
        prop::collection::vec(table, 1..3),
        prop::option::weighted(0.2, edit()),
    )
        .prop_map(|(tables, edit)| {
            let text = tables.concat();
            edit.map_or(text.clone(), |e| apply(&text, &e))
        })
}

/// Loads `overrides` as the file layer; once in force, calls through every site, then loads an
/// empty file, which must be taken.
fn load_and_use(overrides: &Overrides, loaded: &Reached) -> Result<(), TestCaseError> {
    let load = settings::load("input_never_panics.toml", overrides);
    loaded.case(load.is_ok() && !overrides.entries().is_empty());
    match load {
        Ok(()) => {
            use_every_site()?;
            settings::load("none", &Overrides::new())
                .map_err(|e| TestCaseError::fail(format!("emptying the file layer: {e}")))?;
        }
        Err(error) => prop_assert!(!error.to_string().is_empty()),
    }
    Ok(())
}

/// `Overrides::from_toml` of arbitrary text and of near-valid files: overrides, each with a line
/// of the file, or an error; what it gives is loaded (`settings::load`) and used.
#[test]
fn settings_files_of_any_text_are_read_or_refused() {
    let _serial = serial();
    LazyLock::force(&SITES);
    let text = prop_oneof![
        4 => toml_file(),
        1 => "\\PC{0,200}",
        1 => any::<String>(),
    ];
    let (read, loaded) = (Reached::default(), Reached::default());
    runner(768)
        .run(&text, |text| {
            let lines = text.split('\n').count() as u32;
            let overrides = Overrides::from_toml("input_never_panics.toml", &text);
            read.case(overrides.as_ref().is_ok_and(|o| !o.entries().is_empty()));
            match overrides {
                Ok(overrides) => {
                    for entry in overrides.entries() {
                        let line = entry.line.unwrap_or(0);
                        prop_assert!(
                            (1..=lines).contains(&line),
                            "{:?} at line {:?} of {}",
                            entry.setting,
                            entry.line,
                            lines
                        );
                    }
                    load_and_use(&overrides, &loaded)?;
                }
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
            Ok(())
        })
        .unwrap();
    read.at_least(20, "overrides read");
    loaded.at_least(15, "overrides in force");
}

/// The same files as JSON (feature `serde`, through `serde_json`): any text deserializes to
/// overrides or fails, and what it gives is loaded and used.
#[test]
fn settings_from_json_of_any_text_are_read_or_refused() {
    let _serial = serial();
    LazyLock::force(&SITES);
    let json_file = (table(JSON), prop::option::weighted(0.2, edit())).prop_map(
        |((policy, site, rows), edit)| {
            let rows: Vec<String> = rows
                .into_iter()
                .map(|(key, value)| format!("{key}: {value}"))
                .collect();
            let text = format!(
                "{{{}: {{{}: {{{}}}}}}}",
                serde_json::Value::from(policy),
                serde_json::Value::from(site),
                rows.join(", ")
            );
            edit.map_or(text.clone(), |e| apply(&text, &e))
        },
    );
    let text = prop_oneof![3 => json_file, 1 => "\\PC{0,120}"];
    let loaded = Reached::default();
    runner(512)
        .run(&text, |text| {
            match serde_json::from_str::<Overrides>(&text) {
                Ok(overrides) => load_and_use(&overrides, &loaded)?,
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
            Ok(())
        })
        .unwrap();
    loaded.at_least(12, "overrides in force");
}

// ---------------------------------------------------------------------------------------------
// 4. The environment
// ---------------------------------------------------------------------------------------------

/// A site's name as a variable spells it.
fn spelled(site: &str) -> String {
    site.replace("::", "__")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// A variable's value for `setting` of `policy`: near one it takes, any text, or bytes that are
/// not UTF-8 (on unix). Never a NUL, which no environment holds.
fn env_value(policy: Policy, setting: &'static str) -> BoxedStrategy<OsString> {
    let near = near_valid(policy, setting).prop_map(|t| OsString::from(t.replace('\0', "")));
    let text = setting_text().prop_map(|t| OsString::from(t.replace('\0', "")));
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let bytes = prop::collection::vec(1..=255u8, 0..16).prop_map(OsString::from_vec);
        prop_oneof![8 => near, 1 => text, 1 => bytes].boxed()
    }
    #[cfg(not(unix))]
    prop_oneof![8 => near, 1 => text].boxed()
}

/// `RESILIENCY_<POLICY>[__<SITE>]__<SETTING>` for this file's sites (or every site), a real
/// setting or another, and a value near one it takes.
fn env_variable() -> impl Strategy<Value = (String, OsString)> {
    let setting = select(Policy::ALL.to_vec())
        .prop_flat_map(|policy| (Just(policy), select(policy.settings().to_vec())));
    let every_site = prop::bool::weighted(0.25);
    let misspelt = prop::option::weighted(0.1, "[A-Z_]{0,12}");
    (setting, every_site, misspelt).prop_flat_map(|((policy, name), every_site, misspelt)| {
        let prefix = match policy {
            Policy::Breaker => "BREAKER",
            Policy::RaceRetry => "RACE_RETRY",
            Policy::TooBusy => "TOO_BUSY",
            Policy::Timeout => "TIMEOUT",
            Policy::RateLimit => "RATE_LIMIT",
        };
        let setting = misspelt.unwrap_or_else(|| name.to_ascii_uppercase());
        let key = if every_site {
            format!("RESILIENCY_{prefix}__{setting}")
        } else {
            format!(
                "RESILIENCY_{prefix}__{}__{setting}",
                spelled(site_of(policy))
            )
        };
        (Just(key), env_value(policy, name))
    })
}

/// Variables for this file's sites with any value, read by `settings::load_env`: taken (then
/// used by calls through the sites) or refused whole; removing them and reading again empties
/// the layer. (The variables' own grammar, with arbitrary names and bytes, is tested in the
/// runtime crate, `settings::env`.)
#[test]
fn settings_from_the_environment_are_read_or_refused() {
    let _serial = serial();
    LazyLock::force(&SITES);
    let loaded = Reached::default();
    runner(256)
        .run(&prop::collection::vec(env_variable(), 1..3), |vars| {
            for (key, value) in &vars {
                std::env::set_var(key, value);
            }
            let load = settings::load_env();
            for (key, _) in &vars {
                std::env::remove_var(key);
            }
            loaded.case(load.is_ok());
            match load {
                Ok(()) => use_every_site()?,
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
            settings::load_env()
                .map_err(|e| TestCaseError::fail(format!("emptying the environment: {e}")))?;
            Ok(())
        })
        .unwrap();
    loaded.at_least(15, "variables in force");
}

// ---------------------------------------------------------------------------------------------
// 5. Keys taken from requests
// ---------------------------------------------------------------------------------------------

/// Bytes for a request's URI: arbitrary, or near-valid absolute URIs with credentials, ports,
/// IPv6 hosts, `@` in odd places.
fn uri_bytes() -> impl Strategy<Value = Vec<u8>> {
    let near = (
        select(vec!["http://", "https://", "", "//", "HTTP://"]),
        select(vec!["", "user@", "user:pw@", "a@b@", ":@", "@"]),
        prop_oneof![
            "[a-z0-9.-]{0,20}",
            Just("[::1]".to_owned()),
            Just("127.0.0.1".to_owned())
        ],
        select(vec!["", ":80", ":0", ":65536", ":99999999999", ":"]),
        select(vec!["", "/", "/a?b=c@d", "?@"]),
    )
        .prop_map(|(scheme, user, host, port, path)| {
            format!("{scheme}{user}{host}{port}{path}").into_bytes()
        });
    prop_oneof![3 => near, 1 => prop::collection::vec(any::<u8>(), 0..40)]
}

/// One request to a keyed tower breaker: its URI, its `Host`, and the answer it gets (a 503 with
/// a `Retry-After`, or a 200).
type Call = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

fn request_of((uri, host, _): &Call) -> Request<()> {
    let mut request = Request::new(());
    if let Ok(uri) = http::Uri::try_from(uri.as_slice()) {
        *request.uri_mut() = uri;
    }
    if let Some(Ok(host)) = host.as_ref().map(|h| HeaderValue::from_bytes(h)) {
        request.headers_mut().insert(http::header::HOST, host);
    }
    request
}

/// A tower breaker keyed by `authority_of`, under requests of any URI and `Host`: every key is
/// free of credentials, the family never holds more than `max_keys` breakers, and every call is
/// answered or refused.
#[test]
fn keys_from_any_request_stay_bounded() {
    const MAX_KEYS: usize = 8;
    let _serial = serial();
    let rt = paused_runtime();
    let _enter = rt.enter();
    let layer = BreakerLayer::new(
        Breaker::builder("input_never_panics::keyed")
            .error_threshold(1)
            .error_timeout(Duration::from_secs(1))
            .max_keys(MAX_KEYS),
    )
    .unwrap()
    .http_server_errors()
    .key_by(authority_of);
    let service = layer.layer(tower::service_fn(|request: Request<()>| async move {
        let hint = request.headers().get("x-answer-retry-after").cloned();
        let mut response = Response::builder();
        response = match hint {
            Some(hint) => response
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header(http::header::RETRY_AFTER, hint),
            None => response.status(StatusCode::OK),
        };
        Ok::<_, Infallible>(response.body(()).unwrap())
    }));
    let call = (
        uri_bytes(),
        prop::option::of(prop_oneof![
            "[a-z0-9.:@-]{0,24}".prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..24),
        ]),
        prop::option::of(retry_after_bytes()),
    );
    runner(256)
        .run(&prop::collection::vec(call, 1..24), |calls| {
            rt.block_on(async {
                for call in &calls {
                    let mut request = request_of(call);
                    let key = authority_of(&request);
                    prop_assert!(!key.contains('@'), "{:?} keeps credentials", key);
                    if let Some(Ok(hint)) = call.2.as_ref().map(|h| HeaderValue::from_bytes(h)) {
                        request.headers_mut().insert("x-answer-retry-after", hint);
                    }
                    let svc = service.clone();
                    match svc.oneshot(request).await {
                        Ok(_) => {}
                        Err(error) => {
                            prop_assert!(error.downcast_ref::<Rejected>().is_some(), "{:?}", error)
                        }
                    }
                    let held = service.family().len();
                    prop_assert!(held <= MAX_KEYS, "{} keys held", held);
                }
                tokio::time::advance(Duration::from_secs(3600)).await;
                Ok(())
            })
        })
        .unwrap();
}

/// Keys of any text, directly and formatted (`format_args!`, spilling past the stack buffer at
/// any char boundary), name the same breaker.
#[test]
fn keys_of_any_text_name_one_breaker_each() {
    let rt = paused_runtime();
    let _enter = rt.enter();
    let family = Breaker::builder("input_never_panics::keys")
        .max_keys(1 << 20)
        .build_keyed()
        .unwrap();
    let key = prop_oneof![
        "\\PC{0,130}",
        any::<String>(),
        (0..200usize, any::<char>()).prop_map(|(n, c)| "a".repeat(n) + &c.to_string()),
    ];
    runner(512)
        .run(&key, |key| {
            let direct = family.breaker(key.as_str());
            let formatted = family.breaker(&format_args!("{key}"));
            prop_assert!(Arc::ptr_eq(&direct, &formatted), "{:?}", key);
            Ok(())
        })
        .unwrap();
}

/// The empty key, a key of a megabyte and thousands of distinct keys: each gets a breaker, and
/// the family never holds more than `max_keys`.
#[test]
fn extreme_and_many_keys_keep_the_family_within_max_keys() {
    const MAX_KEYS: usize = 16;
    let rt = paused_runtime();
    let _enter = rt.enter();
    let family = Breaker::builder("input_never_panics::many_keys")
        .max_keys(MAX_KEYS)
        .build_keyed()
        .unwrap();
    let huge = "k".repeat(1 << 20);
    for key in ["", huge.as_str(), "\u{0}", "*", "@"] {
        let _ = family.breaker(key);
        assert!(family.get(key).is_some(), "a key of {} bytes", key.len());
    }
    for n in 0..2_000u32 {
        let breaker = family.breaker(&n);
        let _ = breaker.state();
        assert!(family.len() <= MAX_KEYS, "{} keys after {n}", family.len());
    }
}

/// Values, tables and dotted keys nested a hundred thousand deep: refused, not a stack overflow
/// (an abort, which no test could catch).
#[test]
fn settings_files_nested_deeply_are_refused() {
    let depth = 100_000;
    for text in [
        format!("a = {}", "[".repeat(depth)),
        format!("a = {}{}", "[".repeat(depth), "]".repeat(depth)),
        format!("a = {}", "{ b = ".repeat(depth)),
        format!("{}a = 1", "a.".repeat(depth)),
        format!("[breaker.{}a]", "a.".repeat(depth)),
    ] {
        let error = Overrides::from_toml("deep.toml", &text).unwrap_err();
        assert!(error.to_string().starts_with("deep.toml"), "{error}");
    }
    for text in ["[".repeat(depth), "{\"a\":".repeat(depth)] {
        assert!(serde_json::from_str::<Overrides>(&text).is_err());
    }
}
