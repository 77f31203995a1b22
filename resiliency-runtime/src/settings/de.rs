//! `Deserialize` for [`Value`] and [`Overrides`] (feature `serde`), from any format.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use super::{Override, Overrides, Policy, Value};

// The `cfg` on each public impl here repeats the module's: rustdoc marks an impl with its
// feature on the facade's pages, built from this crate's metadata, only from the impl's own.
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Of;

        impl Visitor<'_> for Of {
            type Value = Value;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, or a text such as \"2s\" or \"off\"")
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
                Ok(Value::Int(n))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
                Ok(Value::from(n))
            }

            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Value, E> {
                if !x.is_finite() {
                    return Err(E::custom(format!(
                        "{x} is not a finite number: settings take finite numbers only"
                    )));
                }
                Ok(Value::Float(x))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Value, E> {
                Ok(Value::Text(text.to_owned()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Value, E> {
                Ok(Value::Text(text))
            }
        }

        deserializer.deserialize_any(Of)
    }
}

/// Policy -> site -> setting -> value, as files write them.
pub(super) type Tables<V> = BTreeMap<String, BTreeMap<String, BTreeMap<String, V>>>;

/// The overrides of `tables`, each value with its line (from `line`); an unknown policy is an
/// error.
pub(super) fn overrides<V>(
    tables: Tables<V>,
    mut value: impl FnMut(V) -> (Value, Option<u32>),
) -> Result<Overrides, String> {
    let mut out = Overrides::new();
    for (policy_name, sites) in tables {
        let Some(policy) = Policy::from_name(&policy_name) else {
            let policies: Vec<_> = Policy::ALL.iter().map(|p| p.name()).collect();
            return Err(format!(
                "`{policy_name}` is not a policy; the policies are {}",
                policies.join(", ")
            ));
        };
        for (site, settings) in sites {
            for (setting, v) in settings {
                let (v, line) = value(v);
                out.push(Override {
                    policy,
                    site: site.clone(),
                    setting,
                    value: v,
                    line,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for Overrides {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let tables = Tables::<Value>::deserialize(deserializer)?;
        overrides(tables, |v| (v, None)).map_err(de::Error::custom)
    }
}
