//! Every rule of `resiliency_rules`, broken once through an attribute (compile time) and once
//! through the builder with the same options (run time): both refuse, with the same messages.

use std::time::Duration;

use proc_macro2::TokenStream;
use resiliency_runtime::race_retry::{After, RaceRetry as Raced};
use resiliency_runtime::rate_limit::{Rate, RateLimit as Limiter};
use resiliency_runtime::timeout::Timeout as TimeLimit;
use resiliency_runtime::too_busy::TooBusy as BusyGuard;
use resiliency_runtime::{Breaker as RtBreaker, ConfigError};

use crate::breaker::ast::Breaker;
use crate::driver::{parse_args, Attribute, Errors};
use crate::race_retry::ast::RaceRetry;
use crate::rate_limit::ast::RateLimit;
use crate::timeout::ast::Timeout;
use crate::too_busy::ast::TooBusy;

/// The messages `#[A(args)]` refuses its arguments with.
fn refused_by<A: Attribute>(args: &str) -> Vec<String> {
    let tokens: TokenStream = args.parse().unwrap();
    let mut errors = Errors::default();
    let (attr, given) = parse_args::<A>(tokens, A::NAME, &mut errors);
    attr.validate(&given, &mut errors);
    match errors.finish() {
        Ok(()) => Vec::new(),
        Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
    }
}

fn check<T: std::fmt::Debug>(
    policy: &str,
    name: &str,
    macro_messages: Vec<String>,
    built: Result<T, ConfigError>,
    attribute: &str,
) {
    assert!(
        !macro_messages.is_empty(),
        "{attribute}: the attribute accepted it"
    );
    let builder_message = built.expect_err(attribute).to_string();
    assert_eq!(
        builder_message,
        format!("{policy} `{name}`: {}", macro_messages.join("; ")),
        "{attribute}"
    );
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn every_rule_refuses_the_same_through_attribute_and_builder() {
    let b = || RtBreaker::builder("b");
    let breaker_cases = [
        ("name = \"\"", RtBreaker::builder("").build().map(drop)),
        (
            "capacity = 1.5, timeout = \"1s\"",
            b().capacity(1.5).timeout(ms(1000)).build().map(drop),
        ),
        ("capacity = 0.75", b().capacity(0.75).build().map(drop)),
        (
            "capacity = 0.75, timeout = \"1s\", error_timeout = \"5s\"",
            b().capacity(0.75)
                .timeout(ms(1000))
                .error_timeout(ms(5000))
                .build()
                .map(drop),
        ),
        (
            "failure_rate = 1.5",
            b().failure_rate(1.5).build().map(drop),
        ),
        (
            "failure_rate = 0.5, error_threshold = 3",
            b().failure_rate(0.5).error_threshold(3).build().map(drop),
        ),
        ("min_calls = 5", b().min_calls(5).build().map(drop)),
        (
            "failure_rate = 0.5, min_calls = 0",
            b().failure_rate(0.5).min_calls(0).build().map(drop),
        ),
        (
            "half_open_timeout = \"2s\", timeout = \"1s\"",
            b().half_open_timeout(ms(2000))
                .timeout(ms(1000))
                .build()
                .map(drop),
        ),
        ("backoff = 0.5", b().backoff(0.5).build().map(drop)),
        (
            "max_error_timeout = \"0s\"",
            b().max_error_timeout(Duration::ZERO).build().map(drop),
        ),
        (
            "error_threshold = 0",
            b().error_threshold(0).build().map(drop),
        ),
        (
            "error_threshold = 70000",
            b().error_threshold(70_000).build().map(drop),
        ),
        (
            "success_threshold = 70000",
            b().success_threshold(70_000).build().map(drop),
        ),
        (
            "half_open_calls = 0",
            b().half_open_calls(0).build().map(drop),
        ),
        (
            "timeout = \"0s\"",
            b().timeout(Duration::ZERO).build().map(drop),
        ),
        (
            "error_window = \"0s\"",
            b().error_window(Duration::ZERO).build().map(drop),
        ),
        (
            "key = host, max_keys = 0",
            b().max_keys(0).build_keyed().map(drop),
        ),
        (
            "key = host, idle_timeout = \"0s\"",
            b().idle_timeout(Duration::ZERO).build_keyed().map(drop),
        ),
    ];
    for (args, built) in breaker_cases {
        let name = if args.starts_with("name") { "" } else { "b" };
        check(
            "breaker",
            name,
            refused_by::<Breaker>(args),
            built.map(|_| ()),
            args,
        );
    }

    let r = || Raced::builder("r").total(ms(450));
    let race_cases = [
        (
            "name = \"\", total = \"450ms\"",
            Raced::builder("").total(ms(450)).build(),
        ),
        ("retries = 0, total = \"450ms\"", r().retries(0).build()),
        ("retries = 17, total = \"450ms\"", r().retries(17).build()),
        ("retries = 2", Raced::builder("r").retries(2).build()),
        (
            "max_attempts_in_flight = 0, total = \"450ms\"",
            r().max_attempts_in_flight(0).build(),
        ),
        (
            "after = \"0ms\", total = \"450ms\"",
            r().after(After::Fixed(Duration::ZERO)).build(),
        ),
        (
            "after = \"500ms\", total = \"450ms\"",
            r().after(After::Fixed(ms(500))).build(),
        ),
        (
            "total = \"0ms\"",
            Raced::builder("r").total(Duration::ZERO).build(),
        ),
        (
            "each = \"500ms\", total = \"450ms\"",
            r().each(ms(500)).build(),
        ),
        (
            "each = \"0ms\", total = \"450ms\"",
            r().each(Duration::ZERO).build(),
        ),
        ("budget = 1.5, total = \"450ms\"", r().budget(1.5).build()),
        ("budget = 0.0, total = \"450ms\"", r().budget(0.0).build()),
        (
            "backoff = \"0ms\", total = \"450ms\"",
            r().backoff(Duration::ZERO).build(),
        ),
        (
            "backoff_factor = 0.5, total = \"450ms\"",
            r().backoff_factor(0.5).build(),
        ),
        (
            "backoff_max = \"0ms\", total = \"450ms\"",
            r().backoff_max(Duration::ZERO).build(),
        ),
        (
            "backoff = \"off\", backoff_factor = 2, total = \"450ms\"",
            r().no_backoff().backoff_factor(2.0).build(),
        ),
        (
            "backoff = \"100ms\", backoff_max = \"50ms\", total = \"450ms\"",
            r().backoff(ms(100)).backoff_max(ms(50)).build(),
        ),
    ];
    for (args, built) in race_cases {
        let name = if args.starts_with("name") { "" } else { "r" };
        check(
            "race_retry",
            name,
            refused_by::<RaceRetry>(args),
            built,
            args,
        );
    }

    let t = || BusyGuard::builder("t");
    let busy_cases = [
        ("name = \"\"", BusyGuard::builder("").build()),
        ("max_in_flight = 0", t().max_in_flight(0).build()),
        ("max_lag = \"0ms\"", t().max_lag(Duration::ZERO).build()),
        (
            "max_latency = \"0ms\"",
            t().max_latency(Duration::ZERO).build(),
        ),
    ];
    for (args, built) in busy_cases {
        let name = if args.starts_with("name") { "" } else { "t" };
        check("too_busy", name, refused_by::<TooBusy>(args), built, args);
    }

    let l = || TimeLimit::builder("l");
    let timeout_cases = [
        (
            "name = \"\", total = \"2s\"",
            TimeLimit::builder("").total(ms(2000)).build(),
        ),
        ("", l().build()),
        ("name = \"l\"", l().build()),
        ("total = \"0s\"", l().total(Duration::ZERO).build()),
        // The duration first, without its name, is the `total`.
        ("\"0s\"", l().total(Duration::ZERO).build()),
    ];
    for (args, built) in timeout_cases {
        let name = if args.starts_with("name = \"\"") {
            ""
        } else {
            "l"
        };
        let written =
            crate::timeout::ast::positional(args.parse().unwrap(), &mut Errors::default());
        let written = written.to_string();
        check(
            "timeout",
            name,
            refused_by::<Timeout>(&written),
            built,
            args,
        );
    }

    let r = || Limiter::builder("r").rate(Rate::per_second(100));
    let rate_limit_cases = [
        (
            "name = \"\", rate = \"100/s\"",
            Limiter::builder("").rate(Rate::per_second(100)).build(),
        ),
        ("", Limiter::builder("r").build()),
        ("name = \"r\"", Limiter::builder("r").build()),
        ("burst = 5", Limiter::builder("r").burst(5).build()),
        ("rate = \"100/s\", burst = 0", r().burst(0).build()),
        (
            "rate = \"100/s\", max_wait = \"0s\"",
            r().max_wait(Duration::ZERO).build(),
        ),
        (
            "rate = \"100/s\", burst = 0, max_wait = \"0s\"",
            r().burst(0).max_wait(Duration::ZERO).build(),
        ),
        // The rate first, without its name, is the `rate`.
        ("\"100/s\", burst = 0", r().burst(0).build()),
        (
            "\"5/m\", max_wait = \"0ms\"",
            Limiter::builder("r")
                .rate(Rate::per_minute(5))
                .max_wait(Duration::ZERO)
                .build(),
        ),
    ];
    for (args, built) in rate_limit_cases {
        let name = if args.starts_with("name = \"\"") {
            ""
        } else {
            "r"
        };
        let written = crate::positional::positional(
            args.parse().unwrap(),
            "rate_limit",
            "rate",
            "rate",
            &mut Errors::default(),
        );
        let written = written.to_string();
        check(
            "rate_limit",
            name,
            refused_by::<RateLimit>(&written),
            built,
            args,
        );
    }
}
