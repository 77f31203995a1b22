//! A value judged alone, where it is given (a file, a variable, code), for a site set up or not:
//! its type and unit, and the rules of its own range, on the rules' options of its policy with
//! every other setting at its default. The rules between settings are judged where a site's
//! other settings are known.

use resiliency_rules::{About, BreakerOptions, RaceRetryOptions, TooBusyOptions, Violation};

use super::table::ByName;
use super::{Policy, Value, ALL};

resiliency_rules::breaker_settings!(super::table::by_name! {
    BreakerOptions<'static> => "breaker";
});
resiliency_rules::race_retry_settings!(super::table::by_name! {
    RaceRetryOptions<'static> => "race_retry";
});
resiliency_rules::too_busy_settings!(super::table::by_name! {
    TooBusyOptions<'static> => "too_busy";
});

/// Whether `value` is one `setting` of `policy` takes, judged alone.
pub(super) fn judge(policy: Policy, setting: &'static str, value: &Value) -> Result<(), String> {
    let violations = match policy {
        Policy::Breaker => {
            // Keyed or not: the keyed options are allowed, as a builder allows them.
            let mut options = BreakerOptions {
                name: Some(ALL),
                key: true,
                ..BreakerOptions::default()
            };
            options.set(setting, value)?;
            resiliency_rules::breaker(&options)
        }
        Policy::RaceRetry => {
            let mut options = RaceRetryOptions {
                name: Some(ALL),
                ..RaceRetryOptions::default()
            };
            options.set(setting, value)?;
            resiliency_rules::race_retry(&options)
        }
        Policy::TooBusy => {
            let mut options = TooBusyOptions {
                name: Some(ALL),
                ..TooBusyOptions::default()
            };
            options.set(setting, value)?;
            resiliency_rules::too_busy(&options)
        }
    };
    match violations.iter().find(|v| alone(v, setting)) {
        Some(violation) => Err(violation.message().to_owned()),
        None => Ok(()),
    }
}

/// A rule of `setting`'s own range, that no other setting takes part in.
fn alone(violation: &Violation, setting: &str) -> bool {
    violation.argument() == setting
        && violation.about() == About::Value
        && violation.involves().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_out_of_its_own_range_is_refused_and_a_rule_between_settings_is_left() {
        let refused = |policy, setting, value: Value| judge(policy, setting, &value).unwrap_err();
        assert!(refused(Policy::Breaker, "error_threshold", 0.into()).contains("at least 1"));
        assert!(refused(Policy::Breaker, "failure_rate", 1.5.into()).contains("(0, 1]"));
        assert!(refused(Policy::RaceRetry, "total", "0ms".into()).contains("above zero"));
        assert!(refused(Policy::TooBusy, "max_in_flight", 0.into()).contains("at least 1"));
        assert!(refused(Policy::Breaker, "timeout", "2 parsecs".into()).contains("duration"));
        // Needs `failure_rate`, or `timeout`: judged where the site's settings are known.
        assert_eq!(judge(Policy::Breaker, "min_calls", &5.into()), Ok(()));
        assert_eq!(judge(Policy::Breaker, "capacity", &0.75.into()), Ok(()));
        assert_eq!(judge(Policy::RaceRetry, "after", &"10s".into()), Ok(()));
        assert_eq!(judge(Policy::Breaker, "max_keys", &10.into()), Ok(()));
    }
}

/// The settings sit below the policies: nothing in `settings/` names a policy's module or the
/// generated code's support (doc comments aside), so that a policy is added without touching them.
#[cfg(test)]
mod layers {
    /// What code in `settings/` must not name: every module above it.
    const ABOVE: &[&str] = &[
        "crate::breaker",
        "crate::Breaker",
        "crate::too_busy",
        "crate::race_retry",
        "crate::tower",
        "crate::metrics",
        "crate::fallback",
        "crate::http",
        "crate::named",
        "crate::__private",
        "super::super::",
    ];

    #[test]
    fn nothing_in_settings_names_a_policy() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/settings");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            files += 1;
            for (n, line) in text.lines().enumerate() {
                // Comments, and the quoted names above.
                if line.trim_start().starts_with("//") || line.trim_start().starts_with('"') {
                    continue;
                }
                for above in ABOVE {
                    assert!(
                        !line.contains(above),
                        "{}:{}: `{above}` names a module above the settings: {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
        }
        assert!(files >= 10, "read {files} files of {dir}");
    }
}
