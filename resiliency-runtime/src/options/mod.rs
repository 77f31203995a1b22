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

/// What a policy's rules fn (`resiliency_rules::breaker`, ...) returns for its options: every
/// check of the rules in the runtime goes through here, so that the tests can count them (a
/// site's set-up checks them once).
pub(crate) fn checked(
    violations: Vec<resiliency_rules::Violation>,
) -> Vec<resiliency_rules::Violation> {
    #[cfg(test)]
    checks::CHECKS.with(|checks| checks.set(checks.get() + 1));
    violations
}

#[cfg(test)]
pub(crate) mod checks {
    use std::cell::Cell;

    thread_local! {
        pub(super) static CHECKS: Cell<u32> = const { Cell::new(0) };
    }

    /// The checks of the rules `f` makes on this thread.
    pub(crate) fn counted(f: impl FnOnce()) -> u32 {
        let before = CHECKS.with(Cell::get);
        f();
        CHECKS.with(Cell::get) - before
    }
}
