//! Settings by name at run time: every setting an attribute takes, overridden for one site or
//! for every site of a policy, from code, a configuration file or the environment, without a
//! rebuild.
//!
//! A *site* is one named policy: a `#[breaker]`, `#[too_busy]`, `#[race_retry]`, `#[timeout]` or
//! `#[rate_limit]` function (its
//! name is its `name = "..."`, or the fn's path such as `my_app::db::query`), or a breaker
//! registered from code. The attribute's arguments are the site's defaults; overrides come in
//! three layers, the later winning:
//!
//! 1. a **file** ([`load`]): an [`Overrides`], deserialized with serde from any format (feature
//!    `serde`), or read from TOML with each value's line (feature `toml`,
//!    [`Overrides::from_toml`](Overrides#method.from_toml));
//! 2. the **environment**: `RESILIENCY_<POLICY>__<SITE>__<SETTING>` for one site,
//!    `RESILIENCY_<POLICY>__<SETTING>` for every site of the policy, read when the first site is set
//!    up and again by [`load_env`] (see below);
//! 3. **code**: [`set`] and [`unset`].
//!
//! Within a layer, a site's own value wins over the one for every site (`"*"`, [`ALL`]). A
//! breaker made from code takes settings by name once it is registered
//! ([`BreakerBuilder::register`](crate::BreakerBuilder::register)); one that is only built
//! (`build`, `build_keyed`) has no name in the registry, and its builder is its only setting.
//!
//! # Changes apply to live sites
//!
//! A change applies at once to the sites already running, and keeps their state: an open breaker
//! stays open (a new `error_timeout` decides when it half-opens), a breaker's counted errors are
//! kept unless its rule changes (`error_threshold`, `failure_rate`, `min_calls`, or the window of
//! the rate rule), a guard's calls in flight keep their slots, a race's budget keeps its
//! balance. Calls in flight across a change meet it as follows:
//!
//! | setting | a call admitted before the change |
//! |---|---|
//! | a breaker's `timeout`, `half_open_timeout`, `slow_call_duration` | reads it when its body first waits; one admitted while the breaker had none of the three runs without |
//! | `error_threshold`, `failure_rate`, `min_calls`, `error_window`, `slow_call_rate` | counts in the new window if the rule stays the count rule or the rate rule; a change from one rule to the other starts a clean window, in which calls admitted before it count neither way |
//! | `half_open_calls`, `success_threshold` | holds at once: probes in flight count toward the new values, and no probe is admitted while as many as the new `half_open_calls` are in flight |
//! | `error_timeout` (or `capacity`), `backoff`, `max_error_timeout` | an open breaker half-opens at its last error plus the new open time |
//! | `max_keys` | a lowered bound holds at once for keys that hold nothing worth keeping; the others (open, errors in the window, calls in flight) stay until they can go, new keys meanwhile getting breakers that are not kept |
//! | `idle_timeout` | from the next sweep |
//! | `max_in_flight` | calls in flight keep their slots and count toward the new limit (a call admitted while no `max_in_flight` applied holds no slot, and counts toward none) |
//! | `max_lag`, `max_latency` | from the next call's admission |
//! | a race's `total`, `each`, `retries` | reach a raced call in flight at its next step (its deadline counts from its start) |
//! | `after`, `budget` | from the next attempt the call schedules; the budget keeps its balance |
//!
//! Every value is checked alone where it is given ([`load`], `load_toml` (feature `toml`),
//! [`load_env`], [`set`]): its type and unit, and the rules of its own range
//! (`error_threshold = 0`, a `failure_rate` of 1.5, a zero duration), for every site, set up or
//! not, so that a mistake shows when the settings are loaded rather than at a site's first call.
//! Every change is then checked by the rules the attribute is checked by at compile time, for every
//! live site it reaches. A change that breaks a rule anywhere is refused whole with a
//! [`SettingsError`] that names, for each broken rule, the policy, the site, the setting and
//! where the value came from (the file and line, or the variable); the values in force stay as
//! they were. A rule between two settings (`after` below `total`) broken by a change to the one
//! it is not written for is reported about the setting changed, with the other's value and
//! source: "`total` = 50ms from resiliency.toml:2 must stay above `after` (100ms, from the
//! attribute)". A site set up later whose overrides break a rule keeps its attribute's value for
//! each setting at fault, and the error is logged (`tracing`, level error, target
//! `resiliency::settings`). A change that changes the settings of live sites is logged at level
//! info (one that changes none, at debug).
//!
//! ```
//! use std::time::Duration;
//! use resiliency::settings::{self, Policy, Source};
//! use resiliency::Breaker;
//!
//! let breaker = Breaker::builder("docs-settings").error_threshold(5).register().unwrap();
//!
//! settings::set(Policy::Breaker, "docs-settings", "error_timeout", "30s").unwrap();
//! assert_eq!(breaker.error_timeout(), Duration::from_secs(30));
//!
//! // Checked by the attribute's rules; the value in force stays.
//! let refused = settings::set(Policy::Breaker, "docs-settings", "error_threshold", 0).unwrap_err();
//! assert_eq!(
//!     refused.to_string(),
//!     "code: breaker `docs-settings`, `error_threshold`: `error_threshold` must be at least 1, \
//!      e.g. `error_threshold = 3`"
//! );
//!
//! let effective = settings::effective(Policy::Breaker, "docs-settings").unwrap();
//! let threshold = effective.iter().find(|e| e.setting == "error_threshold").unwrap();
//! assert_eq!((threshold.value.clone(), &threshold.source), (Some(5.into()), &Source::Attribute));
//! let open_for = effective.iter().find(|e| e.setting == "error_timeout").unwrap();
//! assert_eq!(open_for.source, Source::Code);
//! ```
//!
//! # Environment variables
//!
//! `RESILIENCY_` then the policy (`BREAKER`, `RACE_RETRY`, `TOO_BUSY`, `TIMEOUT`, `RATE_LIMIT`), then `__` and the site's
//! name (left out for every site), then `__` and the setting, in capitals:
//!
//! | site | setting | variable |
//! |---|---|---|
//! | `payments` | `error_timeout` | `RESILIENCY_BREAKER__PAYMENTS__ERROR_TIMEOUT=30s` |
//! | `my_app::db::query` | `total` | `RESILIENCY_RACE_RETRY__MY_APP__DB__QUERY__TOTAL=300ms` |
//! | every `#[too_busy]` | `max_lag` | `RESILIENCY_TOO_BUSY__MAX_LAG=50ms` |
//! | `catalog` | `total` | `RESILIENCY_TIMEOUT__CATALOG__TOTAL=2s` |
//! | `partner-api` | `rate` | `RESILIENCY_RATE_LIMIT__PARTNER_API__RATE=200/s` |
//!
//! A site's name is written with `::` as `__`, letters in capitals and every other character
//! that is not a letter or digit as `_` (`payments-eu` as `PAYMENTS_EU`); messages about a live
//! site name it as it is named. A variable for a named site that no live site takes, but whose
//! name is a letter or two off a live site's, is warned about once, when that site is set up or
//! the environment read (`tracing`, level warn, target `resiliency::settings`, with the name it is
//! near): a misspelt name never applies. One that names no site set up so far (sites are set up
//! by their first call) is noted at debug; [`unmatched`] lists every override no site has taken.
//! A file's site is treated the same way: `[breaker."upstrem"]` beside a live `upstream` is
//! warned about once, with the name it is near. `RESILIENCY_DISABLED` is
//! the kill switch (see [`breaker::disabled`](crate::breaker::disabled)), not a setting.
//!
//! # Settings
//!
//! The names are the attribute's arguments, but for those that are code (`name`, `key`,
//! `count_if`, `retry_if`, `crate`): each attribute's arguments table lists them, and
//! [`Policy::settings`] returns them; both come from the one table each policy's settings are
//! declared in.
//!
//! Counts are whole numbers, `capacity`, `failure_rate`, `budget` and the factors finite numbers
//! (NaN and the infinities are refused where they are read),
//! durations texts such as `"450ms"` (or a [`Duration`](std::time::Duration) from code). `"off"`
//! switches off a bound (such as `timeout`, `each`, `max_lag` or `max_in_flight`), `budget` or
//! `backoff`; `after` takes `"p95"` and `max_in_flight` takes `"auto"` as the attribute does (`auto_min`, `auto_max` and `auto_initial` apply to a site whose
//! `max_in_flight` is `"auto"`, and are inert on the others). Setting one of
//! two settings that exclude each other (`capacity` and `error_timeout`, `failure_rate` and
//! `error_threshold`) replaces the attribute's other one; [`effective`] then reports the
//! `error_timeout` that `capacity` gives ([`Source::Derived`]). [`InForce`] reads a value back
//! typed (`duration`, `number`, `count`), the same whether the attribute or an override gives it.
//!
//! # Guarantees
//!
//! * Nothing here is on a call's path: changes and the first call of a site take a lock; calls
//!   read their settings from atomics (a breaker's rule from a pointer swapped whole).
//! * Events are logged once the lock is released: a subscriber may call guarded functions.
//! * A change reaches only the live sites whose settings it changes: its work does not grow
//!   with the other sites, nor with the keys of keyed families it leaves alone.
//! * A refused change changes nothing; a site never runs with settings that break a rule.
//! * Nothing is dropped silently: an override for a site that does not exist (yet) is kept for
//!   when it does, and [`unmatched`] lists the ones no live site has taken, such as a misspelt
//!   name.

mod alone;
mod blame;
mod effective;
mod env;
mod env_store;
mod error;
mod site;
mod store;

#[cfg(feature = "serde")]
mod de;
#[cfg(feature = "toml")]
mod toml_file;

use std::fmt;
use std::sync::Arc;

pub use crate::options::{Policy, Value};
pub use effective::{Effective, InForce};
pub use error::{SettingError, SettingsError};
pub use store::{effective, load, load_env, set, sites, unmatched, unset};

#[cfg(feature = "toml")]
pub use toml_file::load_toml;

pub(crate) use site::usable;
pub(crate) use store::attach;

/// The site name that stands for every site of a policy.
pub const ALL: &str = "*";

/// Where a setting's value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The built-in default: neither the attribute nor an override gives it.
    Default,
    /// The attribute's argument (or, for a breaker registered from code, its builder).
    Attribute,
    /// A configuration file given to [`load`], with the value's line when known.
    File {
        /// The file, as given to [`load`].
        path: Arc<str>,
        /// The value's line, from 1 ([`Overrides::from_toml`](Overrides#method.from_toml) knows it).
        line: Option<u32>,
    },
    /// An environment variable.
    Environment {
        /// The variable's name.
        variable: String,
    },
    /// [`set`], from code.
    Code,
    /// Derived from another setting in force, such as a breaker's `error_timeout` from its
    /// `capacity` and `timeout`.
    Derived {
        /// The setting it is derived from.
        from: &'static str,
        /// That setting's value, as messages write it.
        value: String,
        /// Where that setting's value comes from.
        source: Box<Source>,
    },
}

impl Source {
    /// How a message says where a value comes from, after the value: "from the attribute",
    /// "from resiliency.toml:3", "set at run time".
    pub(crate) fn origin(&self) -> String {
        match self {
            Source::Default => "the default".to_owned(),
            Source::Code => "set at run time".to_owned(),
            Source::Derived { .. } => self.to_string(),
            other => format!("from {other}"),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("the default"),
            Source::Attribute => f.write_str("the attribute"),
            Source::File { path, line: None } => write!(f, "{path}"),
            Source::File {
                path,
                line: Some(line),
            } => write!(f, "{path}:{line}"),
            Source::Environment { variable } => write!(f, "environment variable {variable}"),
            Source::Code => f.write_str("code"),
            Source::Derived {
                from,
                value,
                source,
            } => write!(f, "derived from {from} ({value}, {})", source.origin()),
        }
    }
}

/// One override: a value for one setting of one site (or of every site, [`ALL`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Override {
    /// The policy.
    pub policy: Policy,
    /// The site's name, or [`ALL`].
    pub site: String,
    /// The setting's name.
    pub setting: String,
    /// The value.
    pub value: Value,
    /// The value's line in its file, when known.
    pub line: Option<u32>,
}

/// The overrides of a configuration file, for [`load`]: a table per policy, in it a table per
/// site (`"*"` for every site), in it the settings.
///
/// With the `serde` feature it deserializes from any format, on its own or nested in a
/// configuration of yours; serde gives a value no position, so these values have no line. This
/// TOML, for example, with the `toml` crate (or
/// [`Overrides::from_toml`](Overrides#method.from_toml), feature `toml`, which keeps each
/// value's line for the messages):
///
/// ```toml
/// [breaker."my_app::db::query"]
/// error_threshold = 5
/// error_timeout = "30s"
///
/// [breaker."*"]
/// timeout = "2s"
///
/// [race_retry."my_app::search"]
/// total = "300ms"
/// budget = "off"
///
/// [too_busy."*"]
/// max_lag = "50ms"
/// ```
///
/// From code:
///
/// ```
/// use resiliency::settings::{Overrides, Policy, ALL};
///
/// let overrides = Overrides::new()
///     .with(Policy::Breaker, "my_app::db::query", "error_threshold", 5)
///     .with(Policy::Breaker, ALL, "timeout", "2s");
/// assert_eq!(overrides.entries().len(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    entries: Vec<Override>,
}

impl Overrides {
    /// No overrides.
    pub fn new() -> Self {
        Overrides::default()
    }

    /// Adds a value for `setting` of the `policy` site `site` (or every site, [`ALL`]).
    pub fn with(
        mut self,
        policy: Policy,
        site: &str,
        setting: &str,
        value: impl Into<Value>,
    ) -> Self {
        self.entries.push(Override {
            policy,
            site: site.to_owned(),
            setting: setting.to_owned(),
            value: value.into(),
            line: None,
        });
        self
    }

    /// Every override, in the order given.
    pub fn entries(&self) -> &[Override] {
        &self.entries
    }

    #[cfg(feature = "serde")]
    pub(crate) fn push(&mut self, entry: Override) {
        self.entries.push(entry);
    }
}
