//! The environment's overrides: `RESILIENCY_<POLICY>[__<SITE>]__<SETTING>=<value>`.

use std::ffi::OsString;

use super::{Policy, SettingError, Source, Value, ALL};

/// A site's name as variables write it: `::` as `__`, letters and digits in capitals, any other
/// character as `_` (`my_app::db::query` as `MY_APP__DB__QUERY`).
pub(crate) fn spell(site: &str) -> String {
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

type Entry = (Policy, String, String, Value, Source);

/// The overrides among `vars`: policy, site (as [`spell`] writes it, or `*`), setting (in small
/// letters), value and the variable it came from. Variables that start with `RESILIENCY_` but name
/// no policy are errors; `RESILIENCY_DISABLED` is the kill switch, not a setting.
pub(crate) fn read(
    vars: impl Iterator<Item = (OsString, OsString)>,
) -> Vec<Result<Entry, SettingError>> {
    let mut out = Vec::new();
    for (key, value) in vars {
        let Some(key) = key.to_str() else { continue };
        let Some(rest) = key.strip_prefix("RESILIENCY_") else {
            continue;
        };
        if rest == "DISABLED" {
            continue;
        }
        let source = Source::Environment {
            variable: key.to_owned(),
        };
        let policy = Policy::ALL.into_iter().find_map(|p| {
            rest.strip_prefix(p.variable())
                .and_then(|r| r.strip_prefix("__"))
                .map(|r| (p, r))
        });
        let Some((policy, path)) = policy else {
            out.push(Err(SettingError::unknown(
                source,
                "not a setting: variables are RESILIENCY_<POLICY>__<SITE>__<SETTING> or \
                 RESILIENCY_<POLICY>__<SETTING>, with BREAKER, RACE_RETRY or TOO_BUSY for <POLICY>",
            )));
            continue;
        };
        let (site, setting) = match path.rsplit_once("__") {
            Some((site, setting)) => (site.to_owned(), setting),
            None => (ALL.to_owned(), path),
        };
        let Some(value) = value.to_str() else {
            out.push(Err(SettingError::new(
                policy,
                &site,
                &setting.to_ascii_lowercase(),
                source,
                "the value is not UTF-8",
            )));
            continue;
        };
        out.push(Ok((
            policy,
            site,
            setting.to_ascii_lowercase(),
            Value::Text(value.to_owned()),
            source,
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::store::env_layer_for_tests;

    #[test]
    fn site_names_are_spelled_in_capitals_with_double_underscores() {
        assert_eq!(spell("my_app::db::query"), "MY_APP__DB__QUERY");
        assert_eq!(spell("payments-eu"), "PAYMENTS_EU");
        assert_eq!(spell("Client::get"), "CLIENT__GET");
    }

    #[test]
    fn variables_name_the_policy_the_site_and_the_setting() {
        let (entries, errors) = env_layer_for_tests(vec![
            (
                "RESILIENCY_BREAKER__MY_APP__DB__QUERY__ERROR_TIMEOUT",
                "30s",
            ),
            ("RESILIENCY_TOO_BUSY__MAX_LAG", "50ms"),
            ("RESILIENCY_RACE_RETRY__SEARCH__TOTAL", "300ms"),
            ("RESILIENCY_DISABLED", "0"),
            ("PATH", "/bin"),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        let found: Vec<_> = entries
            .iter()
            .map(|(p, s, n, v, _)| (*p, s.as_str(), *n, v.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    Policy::Breaker,
                    "MY_APP__DB__QUERY",
                    "error_timeout",
                    "30s".into()
                ),
                (Policy::RaceRetry, "SEARCH", "total", "300ms".into()),
                (Policy::TooBusy, "*", "max_lag", "50ms".into()),
            ]
        );
    }

    #[test]
    fn a_bad_variable_is_an_error_that_names_it() {
        let (entries, errors) = env_layer_for_tests(vec![
            ("RESILIENCY_BREAKER__PAYMENTS__ERROR_TRESHOLD", "5"),
            ("RESILIENCY_BREAKER__PAYMENTS__TIMEOUT", "2 parsecs"),
            ("RESILIENCY_BREAKR__TIMEOUT", "2s"),
        ]);
        assert!(entries.is_empty());
        let texts: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            texts[0],
            "environment variable RESILIENCY_BREAKER__PAYMENTS__ERROR_TRESHOLD: breaker `PAYMENTS`, \
             `error_treshold`: `error_treshold` is not a breaker setting; did you mean \
             `error_threshold`? The settings are: error_threshold, error_window, error_timeout, \
             capacity, timeout, half_open_timeout, slow_call_duration, success_threshold, \
             half_open_calls, failure_rate, min_calls, slow_call_rate, backoff, max_error_timeout, \
             idle_timeout, max_keys"
        );
        assert_eq!(
            texts[1],
            "environment variable RESILIENCY_BREAKER__PAYMENTS__TIMEOUT: breaker `PAYMENTS`, \
             `timeout`: `timeout` must be a duration such as \"2s\": `parsecs` is not a unit \
             (the units are ns, us, ms, s, m, h)"
        );
        assert!(texts[2].starts_with("environment variable RESILIENCY_BREAKR__TIMEOUT: "));
        assert!(texts[2].contains("with BREAKER, RACE_RETRY or TOO_BUSY for <POLICY>"));
    }
}
