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
            let variables: Vec<_> = Policy::ALL.iter().map(|p| p.variable()).collect();
            let (last, others) = variables.split_last().expect("there are policies");
            out.push(Err(SettingError::unknown(
                source,
                format!(
                    "not a setting: variables are RESILIENCY_<POLICY>__<SITE>__<SETTING> or \
                     RESILIENCY_<POLICY>__<SETTING>, with {} or {last} for <POLICY>",
                    others.join(", ")
                ),
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
        assert!(texts[2]
            .contains("with BREAKER, RACE_RETRY, TOO_BUSY, TIMEOUT or RATE_LIMIT for <POLICY>"));
    }
}

/// The variables' grammar under arbitrary names and values (bytes that are not UTF-8 included,
/// on unix) and near-valid ones: each `RESILIENCY_` variable but the kill switch is one entry or
/// one error, any other variable nothing, and none of them panics.
#[cfg(test)]
mod proptests {
    use std::ffi::OsString;

    use proptest::prelude::*;
    use proptest::sample::select;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;
    use crate::settings::blame::checked;
    use crate::settings::store::env_layer_for_tests;

    fn runner(cases: u32) -> TestRunner {
        TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        })
    }

    /// Any bytes: a string on unix (where names and values are bytes), else valid UTF-16.
    fn os_string() -> impl Strategy<Value = OsString> {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            prop_oneof![
                "\\PC{0,24}".prop_map(OsString::from),
                prop::collection::vec(any::<u8>(), 0..24).prop_map(OsString::from_vec),
            ]
        }
        #[cfg(not(unix))]
        "\\PC{0,24}".prop_map(OsString::from)
    }

    /// A name near the grammar's: `RESILIENCY_`, a policy (or a misspelt one), sites and a
    /// setting joined by `__`, `_` or nothing, then one character changed now and then.
    fn near_name() -> impl Strategy<Value = String> {
        let policy = select(vec![
            "BREAKER",
            "RACE_RETRY",
            "TOO_BUSY",
            "BREAKR",
            "DISABLED",
            "",
        ]);
        let part = prop_oneof![
            select(vec![
                "ERROR_TIMEOUT",
                "TIMEOUT",
                "MAX_IN_FLIGHT",
                "TOTAL",
                "MY_APP",
                "*",
                "",
                "_",
                "__",
            ])
            .prop_map(String::from),
            "[A-Za-z0-9_]{0,10}",
            "\\PC{0,4}",
        ];
        let joint = select(vec!["__", "__", "__", "_", "", "___"]);
        (
            select(vec![
                "RESILIENCY_",
                "RESILIENCY_",
                "RESILIENCY",
                "resiliency_",
                "",
            ]),
            policy,
            prop::collection::vec((joint, part), 0..4),
            prop::option::weighted(0.2, (any::<prop::sample::Index>(), any::<char>())),
        )
            .prop_map(|(prefix, policy, parts, edit)| {
                let mut name = format!("{prefix}{policy}");
                for (joint, part) in parts {
                    name += joint;
                    name += &part;
                }
                if let Some((at, c)) = edit {
                    let mut chars: Vec<char> = name.chars().collect();
                    if !chars.is_empty() {
                        let at = at.index(chars.len());
                        chars[at] = c;
                    }
                    name = chars.into_iter().collect();
                }
                name
            })
    }

    /// Whether `read` owes `key` an entry or an error: a `RESILIENCY_` variable but the kill
    /// switch, named in UTF-8.
    fn owed(key: &OsString) -> bool {
        key.to_str()
            .and_then(|k| k.strip_prefix("RESILIENCY_"))
            .is_some_and(|rest| rest != "DISABLED")
    }

    /// Reads `vars` as the store does (the grammar, then each value's kind), checking that each
    /// variable owed gives one entry or one error, in order, and an entry its value as it was.
    fn read_as_the_store_does(vars: Vec<(OsString, OsString)>) -> Result<(), TestCaseError> {
        let owed: Vec<&(OsString, OsString)> = vars.iter().filter(|(k, _)| owed(k)).collect();
        let found = read(vars.clone().into_iter());
        prop_assert_eq!(found.len(), owed.len());
        for ((key, value), found) in owed.into_iter().zip(found) {
            match found {
                Ok((policy, site, setting, text, source)) => {
                    prop_assert_eq!(&Value::Text(value.to_str().unwrap().into()), &text);
                    prop_assert_eq!(
                        &source,
                        &Source::Environment {
                            variable: key.to_str().unwrap().to_owned(),
                        }
                    );
                    if let Err(error) = checked(policy, &site, &setting, Some(&text), &source) {
                        prop_assert!(!error.to_string().is_empty());
                    }
                }
                Err(error) => prop_assert!(error.to_string().contains("environment variable")),
            }
        }
        Ok(())
    }

    #[test]
    fn variables_of_any_bytes_are_an_entry_an_error_or_nothing() {
        let vars = prop::collection::vec((os_string(), os_string()), 0..8);
        runner(512).run(&vars, read_as_the_store_does).unwrap();
    }

    #[test]
    fn near_valid_variables_are_an_entry_an_error_or_nothing() {
        let value = prop_oneof![
            select(vec![
                "30s", "1.5s", "off", "auto", "p95", "3", "0.5", "", " "
            ])
            .prop_map(OsString::from),
            os_string(),
        ];
        let vars = prop::collection::vec((near_name().prop_map(OsString::from), value), 0..8);
        runner(512).run(&vars, read_as_the_store_does).unwrap();
    }

    /// Through the store's own reader of the environment's layer: every variable owed is an
    /// entry or an error (entries of one setting at one site keep the last).
    #[test]
    fn the_layer_takes_or_refuses_each_variable() {
        let vars = prop::collection::vec((near_name(), "\\PC{0,12}"), 0..8);
        runner(256)
            .run(&vars, |vars| {
                let owed = vars
                    .iter()
                    .filter(|(k, _)| owed(&OsString::from(k)))
                    .count();
                let pairs: Vec<(&str, &str)> =
                    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let (entries, errors) = env_layer_for_tests(pairs);
                prop_assert!(entries.len() + errors.len() <= owed);
                prop_assert!(errors.len() <= owed);
                prop_assert_eq!(owed == 0, entries.is_empty() && errors.is_empty());
                Ok(())
            })
            .unwrap();
    }
}
