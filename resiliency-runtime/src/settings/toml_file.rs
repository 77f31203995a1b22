//! [`Overrides::from_toml`] (feature `toml`): a TOML file's overrides, each with its line; and
//! [`load_toml`], a TOML file read and put in force in one call.

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
    ///     "resiliency.toml: `breakr` is not a policy; the policies are breaker, race_retry, too_busy, timeout, rate_limit"
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

/// Reads the TOML file at `path` and makes its overrides the file layer ([`Overrides::from_toml`]
/// then [`load`](super::load)), in one call: refused whole, with the values in force kept, when
/// the file cannot be read, is not TOML, names no policy or setting, or holds a value its setting
/// does not take or that breaks a rule. Every error names `path` and, where known, the line.
///
/// ```
/// use resiliency::settings::{self, Policy};
///
/// # let dir = std::env::temp_dir().join(format!("resiliency-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # let path = dir.join("resiliency.toml");
/// std::fs::write(&path, "[breaker.\"payments\"]\nerror_threshold = 5\n").unwrap();
/// settings::load_toml(&path).unwrap();
///
/// std::fs::write(&path, "[breaker.\"payments\"]\nerror_threshold = 0\n").unwrap();
/// let refused = settings::load_toml(&path).unwrap_err().to_string();
/// assert!(refused.ends_with("resiliency.toml:2: breaker `payments`, `error_threshold`: \
///     `error_threshold` must be at least 1, e.g. `error_threshold = 3`"), "{refused}");
/// ```
#[cfg(feature = "toml")]
#[cfg_attr(docsrs, doc(cfg(feature = "toml")))]
pub fn load_toml(path: impl AsRef<std::path::Path>) -> Result<(), SettingsError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| {
        SettingsError::new(vec![SettingError::unknown(
            Source::File {
                path: Arc::from(name.as_str()),
                line: None,
            },
            format!("cannot be read: {error}"),
        )])
    })?;
    super::load(&name, &Overrides::from_toml(&name, &text)?)
}
