//! The errors of settings: one override refused ([`SettingError`]), and a change refused whole
//! ([`SettingsError`]).

use std::fmt;

use super::{Policy, Source, ALL};

/// One value refused: the policy, the site, the setting, where the value came from and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingError {
    policy: Option<Policy>,
    site: Box<str>,
    setting: Box<str>,
    source: Source,
    message: Box<str>,
}

impl SettingError {
    pub(crate) fn new(
        policy: Policy,
        site: &str,
        setting: &str,
        source: Source,
        message: impl Into<String>,
    ) -> Self {
        SettingError {
            policy: Some(policy),
            site: site.into(),
            setting: setting.into(),
            source,
            message: message.into().into(),
        }
    }

    /// A variable or entry that names no policy.
    pub(crate) fn unknown(source: Source, message: impl Into<String>) -> Self {
        SettingError {
            policy: None,
            site: "".into(),
            setting: "".into(),
            source,
            message: message.into().into(),
        }
    }

    /// The same error, the site named `site`.
    pub(crate) fn at_site(mut self, site: &str) -> Self {
        self.site = site.into();
        self
    }

    /// The policy (`None` for a variable or entry that names none).
    pub fn policy(&self) -> Option<Policy> {
        self.policy
    }

    /// The site's name (`*` for a value meant for every site).
    pub fn site(&self) -> &str {
        &self.site
    }

    /// The setting.
    pub fn setting(&self) -> &str {
        &self.setting
    }

    /// Where the value came from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Why it was refused: the rule's text, as the attribute's compile error words it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(policy) = self.policy else {
            return write!(f, "{}: {}", self.source, self.message);
        };
        let site = if &*self.site == ALL {
            format!("every {policy}")
        } else {
            format!("{policy} `{}`", self.site)
        };
        write!(
            f,
            "{}: {site}, `{}`: {}",
            self.source, self.setting, self.message
        )
    }
}

impl std::error::Error for SettingError {}

/// A change refused: every value at fault ([`SettingError`]), one per line in its Display.
/// Nothing of the change was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingsError {
    errors: Vec<SettingError>,
}

impl SettingsError {
    pub(crate) fn new(errors: Vec<SettingError>) -> Self {
        SettingsError { errors }
    }

    /// Each value at fault.
    pub fn errors(&self) -> &[SettingError] {
        &self.errors
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SettingsError {}
