//! [`ConfigError`]: why a builder refused its options.

use std::fmt;
use std::sync::Arc;

use resiliency_rules::Violation;

/// Why a builder ([`BreakerBuilder`](crate::BreakerBuilder),
/// [`RaceRetryBuilder`](crate::race_retry::RaceRetryBuilder),
/// [`TooBusyBuilder`](crate::too_busy::TooBusyBuilder)) refused its options. Its Display names the
/// policy and its name, then every rule broken (the same words as the attribute's compile errors):
/// "breaker `payments`: `capacity` must lie between 0 and 1 (exclusive), got 1.5: ...".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    policy: &'static str,
    name: Arc<str>,
    message: String,
}

impl ConfigError {
    /// The error for `violations` of the options of `policy` `name`, if there are any.
    pub(crate) fn from_violations(
        policy: &'static str,
        name: &str,
        violations: Vec<Violation>,
    ) -> Result<(), ConfigError> {
        if violations.is_empty() {
            return Ok(());
        }
        let message = violations
            .iter()
            .map(Violation::message)
            .collect::<Vec<_>>()
            .join("; ");
        Err(ConfigError::new(policy, name, message))
    }

    pub(crate) fn new(policy: &'static str, name: &str, message: String) -> ConfigError {
        ConfigError {
            policy,
            name: Arc::from(name),
            message,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`: {}", self.policy, self.name, self.message)
    }
}

impl std::error::Error for ConfigError {}
