//! One test per rule: the options that break it, and the violation reported.

use std::time::Duration;

use crate::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The one violation of `violations`, as (argument, about, message).
fn only(violations: Vec<Violation>) -> (&'static str, About, String) {
    assert_eq!(violations.len(), 1, "{violations:?}");
    let v = &violations[0];
    assert_eq!(v.to_string(), v.message());
    (v.argument(), v.about(), v.message().to_owned())
}

fn b() -> BreakerOptions<'static> {
    BreakerOptions::default()
}

fn r() -> RaceRetryOptions<'static> {
    RaceRetryOptions {
        total: Some(ms(450)),
        ..RaceRetryOptions::default()
    }
}

#[test]
fn defaults_break_nothing() {
    assert!(breaker(&b()).is_empty());
    assert!(race_retry(&r()).is_empty());
    assert!(too_busy(&TooBusyOptions::default()).is_empty());
}

#[test]
fn names_must_not_be_empty() {
    let message = "`name` must not be empty".to_owned();
    let v = only(breaker(&BreakerOptions {
        name: Some(""),
        ..b()
    }));
    assert_eq!(v, ("name", About::Value, message.clone()));
    let v = only(race_retry(&RaceRetryOptions {
        name: Some(""),
        ..r()
    }));
    assert_eq!(v, ("name", About::Value, message.clone()));
    let v = only(too_busy(&TooBusyOptions {
        name: Some(""),
        ..Default::default()
    }));
    assert_eq!(v, ("name", About::Value, message));
    assert!(breaker(&BreakerOptions {
        name: Some("db"),
        ..b()
    })
    .is_empty());
}

#[test]
fn breaker_capacity_lies_between_zero_and_one() {
    for c in [0.0, 1.0, 1.5, -0.1, f64::NAN] {
        let o = BreakerOptions {
            capacity: Some(c),
            timeout: Some(ms(100)),
            ..b()
        };
        let (arg, about, message) = only(breaker(&o));
        assert_eq!((arg, about), ("capacity", About::Value));
        assert!(message.contains("e.g. `capacity = 0.75`"), "{message}");
    }
    let o = BreakerOptions {
        capacity: Some(0.75),
        timeout: Some(ms(100)),
        ..b()
    };
    assert!(breaker(&o).is_empty());
}

#[test]
fn breaker_capacity_needs_timeout_and_excludes_error_timeout() {
    let v = only(breaker(&BreakerOptions {
        capacity: Some(0.5),
        ..b()
    }));
    assert_eq!((v.0, v.1), ("capacity", About::Presence));
    assert!(v.2.starts_with("`capacity` needs `timeout`"));
    // A malformed `timeout` is written: not reported missing.
    let o = BreakerOptions {
        capacity: Some(0.5),
        written: &["timeout"],
        ..b()
    };
    assert!(breaker(&o).is_empty());
    let o = BreakerOptions {
        capacity: Some(0.5),
        error_timeout: Some(ms(5)),
        timeout: Some(ms(9)),
        ..b()
    };
    let v = only(breaker(&o));
    assert_eq!((v.0, v.1), ("error_timeout", About::Presence));
}

#[test]
fn breaker_failure_rate_lies_in_zero_to_one_and_excludes_error_threshold() {
    for rate in [0.0, 1.01, f64::NAN] {
        let v = only(breaker(&BreakerOptions {
            failure_rate: Some(rate),
            ..b()
        }));
        assert_eq!((v.0, v.1), ("failure_rate", About::Value));
        assert!(v.2.contains("e.g. `failure_rate = 0.5`"));
    }
    assert!(breaker(&BreakerOptions {
        failure_rate: Some(1.0),
        ..b()
    })
    .is_empty());
    let o = BreakerOptions {
        failure_rate: Some(0.5),
        error_threshold: Some(3),
        ..b()
    };
    assert_eq!(only(breaker(&o)).0, "error_threshold");
}

#[test]
fn breaker_min_calls_belongs_to_the_rate_rule() {
    let v = only(breaker(&BreakerOptions {
        min_calls: Some(5),
        ..b()
    }));
    assert_eq!((v.0, v.1), ("min_calls", About::Presence));
    let o = BreakerOptions {
        min_calls: Some(0),
        failure_rate: Some(0.5),
        ..b()
    };
    assert_eq!(only(breaker(&o)).0, "min_calls");
    let o = BreakerOptions {
        min_calls: Some(5),
        failure_rate: Some(0.5),
        ..b()
    };
    assert!(breaker(&o).is_empty());
}

#[test]
fn breaker_counts_run_from_one_to_65535() {
    for arg in ["error_threshold", "success_threshold", "half_open_calls"] {
        for (n, word) in [(0, "at least 1"), (MAX_COUNT + 1, "at most 65535")] {
            let mut o = b();
            *match arg {
                "error_threshold" => &mut o.error_threshold,
                "success_threshold" => &mut o.success_threshold,
                _ => &mut o.half_open_calls,
            } = Some(n);
            let v = only(breaker(&o));
            assert_eq!((v.0, v.1), (arg, About::Value));
            assert!(v.2.contains(word), "{}", v.2);
        }
    }
    let v = only(breaker(&BreakerOptions {
        error_threshold: Some(70_000),
        ..b()
    }));
    assert!(v.2.contains("use the rate rule"), "{}", v.2);
    assert!(breaker(&BreakerOptions {
        error_threshold: Some(MAX_COUNT),
        ..b()
    })
    .is_empty());
}

#[test]
fn breaker_durations_are_above_zero() {
    let zero = Some(Duration::ZERO);
    let cases = [
        (
            "error_window",
            BreakerOptions {
                error_window: zero,
                ..b()
            },
        ),
        (
            "error_timeout",
            BreakerOptions {
                error_timeout: zero,
                ..b()
            },
        ),
        (
            "timeout",
            BreakerOptions {
                timeout: zero,
                ..b()
            },
        ),
        (
            "half_open_timeout",
            BreakerOptions {
                half_open_timeout: zero,
                ..b()
            },
        ),
        (
            "max_error_timeout",
            BreakerOptions {
                max_error_timeout: zero,
                backoff: Some(2.0),
                ..b()
            },
        ),
        (
            "idle_timeout",
            BreakerOptions {
                idle_timeout: zero,
                key: true,
                ..b()
            },
        ),
    ];
    for (arg, o) in cases {
        let v = only(breaker(&o));
        assert_eq!(
            v,
            (
                arg,
                About::Value,
                format!("`{arg}` must be above zero, e.g. `{arg} = \"450ms\"`")
            )
        );
    }
}

#[test]
fn breaker_half_open_timeout_is_shorter_than_timeout() {
    let o = BreakerOptions {
        half_open_timeout: Some(ms(100)),
        timeout: Some(ms(100)),
        ..b()
    };
    let v = only(breaker(&o));
    assert_eq!((v.0, v.1), ("half_open_timeout", About::Value));
    assert_eq!(
        v.2,
        "`half_open_timeout` (100ms) must be shorter than `timeout` (100ms)"
    );
    let o = BreakerOptions {
        half_open_timeout: Some(ms(50)),
        timeout: Some(ms(100)),
        ..b()
    };
    assert!(breaker(&o).is_empty());
}

#[test]
fn breaker_backoff_is_a_finite_factor_of_at_least_one() {
    for f in [0.5, f64::INFINITY, f64::NAN] {
        let v = only(breaker(&BreakerOptions {
            backoff: Some(f),
            ..b()
        }));
        assert_eq!((v.0, v.1), ("backoff", About::Value));
        assert!(v.2.contains("e.g. `backoff = 2.0`"));
    }
    assert!(breaker(&BreakerOptions {
        backoff: Some(1.0),
        ..b()
    })
    .is_empty());
}

#[test]
fn breaker_max_error_timeout_alone_caps_hints() {
    // Without `backoff` it is the cap on a `Retry-After` hint: taken alone, under either spelling.
    for written in [&[][..], &["backoff"][..]] {
        let o = BreakerOptions {
            max_error_timeout: Some(ms(5)),
            written,
            ..b()
        };
        assert!(breaker(&o).is_empty(), "{written:?}");
    }
}

#[test]
fn breaker_keyed_options_need_a_key() {
    for (arg, o) in [
        (
            "idle_timeout",
            BreakerOptions {
                idle_timeout: Some(ms(5)),
                ..b()
            },
        ),
        (
            "max_keys",
            BreakerOptions {
                max_keys: Some(5),
                ..b()
            },
        ),
    ] {
        let v = only(breaker(&o));
        assert_eq!((v.0, v.1), (arg, About::Presence));
        assert!(breaker(&BreakerOptions { key: true, ..o }).is_empty());
    }
    let v = only(breaker(&BreakerOptions {
        max_keys: Some(0),
        key: true,
        ..b()
    }));
    assert_eq!((v.0, v.1), ("max_keys", About::Value));
}

#[test]
fn every_violation_is_reported_at_once() {
    let o = BreakerOptions {
        capacity: Some(2.0),
        failure_rate: Some(3.0),
        backoff: Some(0.0),
        ..b()
    };
    let arguments: Vec<_> = breaker(&o).iter().map(Violation::argument).collect();
    assert_eq!(
        arguments,
        ["capacity", "capacity", "failure_rate", "backoff"]
    );
}

#[test]
fn race_retries_run_from_one_to_max_retries() {
    for n in [0, MAX_RETRIES + 1, u32::MAX] {
        let v = only(race_retry(&RaceRetryOptions {
            retries: Some(n),
            ..r()
        }));
        assert_eq!((v.0, v.1), ("retries", About::Value));
        assert!(
            v.2.contains("from 1 to 16, such as `retries = 2`"),
            "{}",
            v.2
        );
    }
    assert!(race_retry(&RaceRetryOptions {
        retries: Some(MAX_RETRIES),
        ..r()
    })
    .is_empty());
}

#[test]
fn race_max_attempts_in_flight_is_at_least_one_with_no_upper_bound() {
    let v = only(race_retry(&RaceRetryOptions {
        max_attempts_in_flight: Some(0),
        ..r()
    }));
    assert_eq!((v.0, v.1), ("max_attempts_in_flight", About::Value));
    assert!(v.2.contains("at least 1"), "{}", v.2);
    // Above `retries + 1` it caps nothing, and is no mistake: a setting for every site may
    // give it to sites of any `retries`.
    for n in [1, 2, MAX_RETRIES + 1, u32::MAX] {
        let options = RaceRetryOptions {
            max_attempts_in_flight: Some(n),
            retries: Some(1),
            ..r()
        };
        assert_eq!(race_retry(&options), [], "{n}");
    }
}

#[test]
fn race_total_is_required_and_above_zero() {
    let v = only(race_retry(&RaceRetryOptions::default()));
    assert_eq!((v.0, v.1), ("total", About::Presence));
    let o = RaceRetryOptions {
        written: &["total"],
        ..RaceRetryOptions::default()
    };
    assert!(race_retry(&o).is_empty());
    let v = only(race_retry(&RaceRetryOptions {
        total: Some(Duration::ZERO),
        ..r()
    }));
    assert_eq!(
        v,
        (
            "total",
            About::Value,
            "`total` must be above zero, e.g. `total = \"450ms\"`".into()
        )
    );
}

#[test]
fn race_after_is_above_zero_below_total_or_a_percentile() {
    for after in [
        After::Fixed(Duration::ZERO),
        After::Fixed(ms(450)),
        After::Fixed(ms(451)),
    ] {
        let v = only(race_retry(&RaceRetryOptions {
            after: Some(after),
            ..r()
        }));
        assert_eq!((v.0, v.1), ("after", About::Value));
    }
    for q in [0.0, 1.0, -1.0, 2.0, f64::NAN, f64::INFINITY] {
        let v = only(race_retry(&RaceRetryOptions {
            after: Some(After::Percentile(q)),
            ..r()
        }));
        assert_eq!((v.0, v.1), ("after", About::Value));
        assert!(v.2.contains("such as \"p95\""));
    }
    for after in [After::Fixed(ms(150)), After::Percentile(0.95)] {
        assert!(race_retry(&RaceRetryOptions {
            after: Some(after),
            ..r()
        })
        .is_empty());
    }
}

#[test]
fn race_each_is_above_zero_and_below_total() {
    for each in [Duration::ZERO, ms(450), Duration::MAX] {
        let v = only(race_retry(&RaceRetryOptions {
            each: Some(each),
            ..r()
        }));
        assert_eq!((v.0, v.1), ("each", About::Value));
    }
    assert!(race_retry(&RaceRetryOptions {
        each: Some(ms(300)),
        ..r()
    })
    .is_empty());
}

#[test]
fn race_budget_share_lies_in_its_range() {
    for share in [0.0, 0.0009, 1.01, -1.0, f64::NAN, f64::INFINITY] {
        let v = only(race_retry(&RaceRetryOptions {
            budget: Some(Budget::Share(share)),
            ..r()
        }));
        assert_eq!((v.0, v.1), ("budget", About::Value));
        assert!(v.2.contains("from 0.001 to 1"), "{}", v.2);
        assert!(v.2.contains("such as `budget = 0.1`"), "{}", v.2);
    }
    for share in [MIN_BUDGET_SHARE, MAX_BUDGET_SHARE, 0.1] {
        assert!(race_retry(&RaceRetryOptions {
            budget: Some(Budget::Share(share)),
            ..r()
        })
        .is_empty());
    }
    assert!(race_retry(&RaceRetryOptions {
        budget: Some(Budget::Off),
        ..r()
    })
    .is_empty());
}

#[test]
fn race_backoff_rules() {
    let v = only(race_retry(&RaceRetryOptions {
        backoff: Some(Backoff::Base(Duration::ZERO)),
        ..r()
    }));
    assert_eq!((v.0, v.1), ("backoff", About::Value));
    for f in [0.5, f64::NAN, f64::INFINITY] {
        let v = only(race_retry(&RaceRetryOptions {
            backoff_factor: Some(f),
            ..r()
        }));
        assert_eq!((v.0, v.1), ("backoff_factor", About::Value));
    }
    let v = only(race_retry(&RaceRetryOptions {
        backoff_max: Some(Duration::ZERO),
        ..r()
    }));
    assert_eq!((v.0, v.1), ("backoff_max", About::Value));
    let o = RaceRetryOptions {
        backoff: Some(Backoff::Base(ms(20))),
        backoff_max: Some(ms(10)),
        ..r()
    };
    let v = only(race_retry(&o));
    assert_eq!((v.0, v.1), ("backoff_max", About::Value));
    assert!(v
        .2
        .starts_with("`backoff_max` (10ms) is below `backoff` (20ms)"));
    let o = RaceRetryOptions {
        backoff: Some(Backoff::Base(ms(10))),
        backoff_max: Some(ms(10)),
        backoff_factor: Some(1.0),
        ..r()
    };
    assert!(race_retry(&o).is_empty());
}

#[test]
fn race_no_backoff_excludes_the_backoff_settings() {
    for o in [
        RaceRetryOptions {
            backoff_factor: Some(2.0),
            ..r()
        },
        RaceRetryOptions {
            backoff_max: Some(ms(5)),
            ..r()
        },
        RaceRetryOptions {
            written: &["backoff_max"],
            ..r()
        },
    ] {
        let v = only(race_retry(&RaceRetryOptions {
            backoff: Some(Backoff::Off),
            ..o
        }));
        assert_eq!(v.1, About::Presence);
        assert!(v.2.contains("does nothing with `backoff = \"off\"`"));
    }
}

#[test]
fn too_busy_rules() {
    let none = TooBusyOptions::default;
    for (arg, o) in [
        (
            "max_lag",
            TooBusyOptions {
                max_lag: Some(Duration::ZERO),
                ..none()
            },
        ),
        (
            "max_latency",
            TooBusyOptions {
                max_latency: Some(Duration::ZERO),
                ..none()
            },
        ),
    ] {
        assert_eq!(
            only(too_busy(&o)),
            (
                arg,
                About::Value,
                format!("`{arg}` must be above zero, e.g. `{arg} = \"450ms\"`")
            )
        );
    }
    let v = only(too_busy(&TooBusyOptions {
        max_in_flight: Some(InFlight::Fixed(0)),
        ..none()
    }));
    assert_eq!((v.0, v.1), ("max_in_flight", About::Value));
    assert!(v.2.contains("e.g. `max_in_flight = 256`"));
    let o = TooBusyOptions {
        max_lag: Some(ms(70)),
        max_in_flight: Some(InFlight::Fixed(1)),
        max_latency: Some(ms(1)),
        name: Some("x"),
        ..none()
    };
    assert!(too_busy(&o).is_empty());
}

#[test]
fn too_busy_auto_rules() {
    let none = TooBusyOptions::default;
    let auto = || TooBusyOptions {
        max_in_flight: Some(InFlight::Auto),
        ..none()
    };
    assert!(too_busy(&auto()).is_empty());
    assert!(too_busy(&TooBusyOptions {
        auto_min: Some(1),
        auto_initial: Some(1),
        auto_max: Some(1),
        ..auto()
    })
    .is_empty());
    // Bounds without "auto" are inert, whatever their values.
    assert!(too_busy(&TooBusyOptions {
        auto_min: Some(0),
        auto_max: Some(1),
        auto_initial: Some(9),
        max_in_flight: Some(InFlight::Fixed(8)),
        ..none()
    })
    .is_empty());
    let v = only(too_busy(&TooBusyOptions {
        auto_min: Some(0),
        ..auto()
    }));
    assert_eq!((v.0, v.1), ("auto_min", About::Value));
    // `auto_max` below the default `auto_min`, and `auto_initial` outside the bounds.
    assert!(too_busy(&TooBusyOptions {
        auto_max: Some(2),
        auto_initial: Some(2),
        auto_min: Some(1),
        ..auto()
    })
    .is_empty());
    let all = too_busy(&TooBusyOptions {
        auto_max: Some(0),
        auto_initial: Some(3),
        ..auto()
    });
    let names: Vec<_> = all.iter().map(|v| v.argument()).collect();
    assert_eq!(names, ["auto_max", "auto_initial"]);
    assert_eq!(
        all[0].to_string(),
        "`auto_max` (0) must be at least `auto_min` (1, its default)"
    );
}

#[test]
fn a_fixed_default_is_in_force_until_a_value_is_given() {
    let given = BreakerOptions {
        error_threshold: Some(7),
        idle_timeout: Some(ms(5)),
        ..b()
    };
    assert_eq!(given.error_threshold(), 7);
    assert_eq!(given.idle_timeout(), ms(5));
    assert_eq!(given.or_defaults().error_threshold, Some(7));
    // `or_defaults` fills in the settings with a fixed default, and only those.
    let filled = b().or_defaults();
    assert_eq!(filled.error_threshold, Some(b().error_threshold()));
    assert_eq!(filled.max_keys, Some(b().max_keys()));
    assert_eq!(filled.backoff, Some(b().backoff()));
    assert_eq!(
        (
            filled.error_window,
            filled.capacity,
            filled.max_error_timeout
        ),
        (None, None, None)
    );
    let filled = r().or_defaults();
    assert_eq!(filled.after, Some(r().after()));
    assert_eq!(
        (filled.total, filled.each, filled.backoff),
        (r().total, None, None)
    );
    assert_eq!(TooBusyOptions::default().or_defaults().max_in_flight, None);
}

#[test]
fn every_fixed_default_lies_in_its_own_range() {
    let breaker_defaults = BreakerOptions {
        key: true,
        ..b().or_defaults()
    };
    let out_of_range: Vec<_> = breaker(&breaker_defaults)
        .into_iter()
        .filter(|v| v.about() == About::Value)
        .collect();
    assert_eq!(out_of_range, []);
    assert_eq!(race_retry(&r().or_defaults()), []);
    let auto = TooBusyOptions {
        max_in_flight: Some(InFlight::Auto),
        ..TooBusyOptions::default().or_defaults()
    };
    assert_eq!(too_busy(&auto), []);
}

#[test]
fn max_error_timeout_is_a_multiple_of_error_timeout_unless_given() {
    let derived = b().max_error_timeout_for(ms(100));
    assert!(
        derived > ms(100) && derived.as_nanos().is_multiple_of(ms(100).as_nanos()),
        "{derived:?}"
    );
    assert_eq!(b().max_error_timeout_for(Duration::MAX), Duration::MAX);
}
