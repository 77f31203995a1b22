//! [`Policy`], made from the rules' list of policies (`resiliency_rules::policies!`): one variant
//! per row, each method one arm per row, and the settings by name of each policy's rules'
//! options, on which a value given alone is judged.

use std::fmt;

use resiliency_rules::Violation;

use super::Value;

/// `Policy` and the settings by name of the rules' options, from the rows of
/// `resiliency_rules::policies!` that follow.
macro_rules! policy {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident: $name:ident, env $variable:literal,
            options $options:ident { $($field:ident: $value:expr),* },
            rules $rules:ident, table $table:ident;
    )*) => {
        /// A kind of policy, as settings name it.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Policy {
            $(
                $(#[doc = $doc])*
                $variant,
            )*
        }

        impl Policy {
            /// Every policy.
            pub const ALL: [Policy; [$(Policy::$variant),*].len()] = [$(Policy::$variant),*];

            #[doc = concat!(
                "The policy's name as files and messages write it: ",
                listed!($(stringify!($name)),*),
                "."
            )]
            pub fn name(self) -> &'static str {
                match self {
                    $(Policy::$variant => stringify!($name),)*
                }
            }

            #[doc = concat!("The policy by its name (", listed!($(stringify!($name)),*), ").")]
            pub fn from_name(name: &str) -> Option<Policy> {
                Policy::ALL.into_iter().find(|p| p.name() == name)
            }

            /// The settings a site of this policy takes: the attribute's arguments, but for the
            /// ones that are code (`name`, `key`, `count_if`, `retry_if`, `crate`).
            pub fn settings(self) -> &'static [&'static str] {
                match self {
                    $(Policy::$variant => resiliency_rules::$options::SETTINGS,)*
                }
            }

            /// The setting called `name`, as a `'static` name.
            pub(crate) fn setting(self, name: &str) -> Option<&'static str> {
                self.settings().iter().copied().find(|s| *s == name)
            }

            #[doc = concat!("The env-variable spelling: ", listed!($($variable),*), ".")]
            pub(crate) fn variable(self) -> &'static str {
                match self {
                    $(Policy::$variant => $variable,)*
                }
            }

            /// Every rule that the widest options a site called `site` may have (a keyed
            /// breaker's) break when they give `setting` alone, as `value`; `Err` says why `value`
            /// is not one `setting` takes.
            pub(crate) fn violations_alone(
                self,
                site: &str,
                setting: &'static str,
                value: &Value,
            ) -> Result<Vec<Violation>, String> {
                use super::ByName as _;
                match self {
                    $(Policy::$variant => {
                        let mut options = resiliency_rules::$options {
                            name: Some(site),
                            $($field: $value,)*
                            ..resiliency_rules::$options::default()
                        };
                        options.set(setting, value)?;
                        Ok(resiliency_rules::$rules(&options))
                    })*
                }
            }
        }

        $(
            resiliency_rules::$table!(super::table::by_name! {
                resiliency_rules::$options<'_> => $name;
            });
        )*
    };
}

/// The texts given, each in backquotes, between commas: "`a`, `b`, `c`".
macro_rules! listed {
    ($first:expr $(, $rest:expr)*) => {
        concat!("`", $first, "`" $(, ", `", $rest, "`")*)
    };
}

resiliency_rules::policies!(policy! {});

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
