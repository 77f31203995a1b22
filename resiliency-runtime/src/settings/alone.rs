//! A value judged alone, where it is given (a file, a variable, code), for a site set up or not:
//! its type and unit, and the rules of its own range, on the rules' options of its policy with
//! every other setting at its default. The rules between settings are judged where a site's
//! other settings are known.

use resiliency_rules::{About, Violation};

use super::{Policy, Value, ALL};

/// Whether `value` is one `setting` of `policy` takes, judged alone: on the widest options a
/// site of the policy may have (keyed or not, a breaker takes the keyed options, as a builder
/// does).
pub(super) fn judge(policy: Policy, setting: &'static str, value: &Value) -> Result<(), String> {
    let violations = policy.violations_alone(ALL, setting, value)?;
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
