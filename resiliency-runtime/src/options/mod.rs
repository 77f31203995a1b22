//! The options of every policy, below the policies and the settings by name: the [`Policy`] list,
//! made from the rules' (`resiliency_rules::policies!`); the code each policy's settings table
//! gives (its builder's methods and its settings read and written by name, `table`); a setting's
//! [`Value`]; and the traits a policy's options implement ([`Options`], [`Target`]).
//!
//! Nothing here knows a policy's engine: the policies' folders and the settings by name build
//! on this layer, which imports neither (the crate's `layers` test reads the sources to keep it
//! so).

mod policy;
mod site;
pub(crate) mod table;
mod value;

pub use policy::Policy;
pub use value::Value;

pub(crate) use site::{Options, Target};
pub(crate) use table::ByName;
