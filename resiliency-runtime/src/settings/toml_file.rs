//! [`Overrides::from_toml`] (feature `toml`): a TOML file's overrides, each with its line.

use std::sync::Arc;

use super::de::{overrides, Tables};
use super::{Overrides, SettingError, SettingsError, Source, Value};

// The `cfg` repeats the module's: rustdoc marks this impl with its feature on the facade's
// pages, built from this crate's metadata, only from the impl's own.
#[cfg(feature = "toml")]
#[cfg_attr(docsrs, doc(cfg(feature = "toml")))]
impl Overrides {
    /// The overrides of the TOML text `text` of the file `path`, each value with its line, so that
    /// an error about it names `path:line`. A table per policy (`[breaker."my_app::db::query"]`,
    /// `[too_busy."*"]`), settings as keys; see [`Overrides`].
    ///
    /// ```
    /// use resiliency::settings::{Overrides, Policy};
    ///
    /// let text = r#"
    /// [breaker."my_app::db::query"]
    /// error_threshold = 5
    /// error_timeout = "30s"
    /// "#;
    /// let overrides = Overrides::from_toml("resiliency.toml", text).unwrap();
    /// let entry = &overrides.entries()[1];
    /// assert_eq!((entry.policy, entry.setting.as_str(), entry.line), (Policy::Breaker, "error_timeout", Some(4)));
    ///
    /// let error = Overrides::from_toml("resiliency.toml", "[breakr.db]\ntimeout = \"2s\"\n").unwrap_err();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "resiliency.toml: `breakr` is not a policy; the policies are breaker, race_retry, too_busy"
    /// );
    /// ```
    pub fn from_toml(path: &str, text: &str) -> Result<Overrides, SettingsError> {
        let path: Arc<str> = Arc::from(path);
        // The offset of each line's end, found once: a value's line is a binary search away.
        let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
        let line_of = |offset: usize| (ends.partition_point(|&end| end < offset) + 1) as u32;
        let tables: Tables<toml::Spanned<Value>> = toml::from_str(text).map_err(|error| {
            let source = Source::File {
                path: path.clone(),
                line: error.span().map(|span| line_of(span.start)),
            };
            SettingsError::new(vec![SettingError::unknown(
                source,
                error.message().to_owned(),
            )])
        })?;
        overrides(tables, |v| {
            let line = line_of(v.span().start);
            (v.into_inner(), Some(line))
        })
        .map_err(|message| {
            SettingsError::new(vec![SettingError::unknown(
                Source::File { path, line: None },
                message,
            )])
        })
    }
}
