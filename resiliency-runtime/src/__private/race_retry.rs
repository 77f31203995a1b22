//! `#[race_retry]`'s sites: a policy per name, set up at the first call, the calls its expansion
//! makes, and each attempt's copy of the arguments.

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;

use crate::race_retry::future::{Always, Hinted as RaceHinted, Race};
pub use crate::race_retry::{After, Backoff, Budget};
use crate::race_retry::{MakeAttempt, RaceRetry, RaceRetryBuilder};
use crate::rejected::FromRejected;

/// The policy of `options` with no rule checked: values past the rules clamped as a policy
/// clamps whatever it holds (a `total` not given is zero). For the tests of the `race_retry`
/// guarantees on extreme settings; nothing else builds such a policy.
pub fn race_retry_unchecked(options: RaceRetryBuilder) -> RaceRetry {
    RaceRetry::unchecked(&options)
}

/// A `#[race_retry]` site: its policy, set up on first use from the attribute's arguments
/// (`configure`, as builder calls), checked then by the builder's rules, with the run-time
/// settings on top. The policy is the one registered under the site's name: sites of one name
/// (and a policy registered from code or by a layer by that name) share it, the first set up
/// giving its options (a site whose own options differ logs the difference).
pub struct RaceSite {
    name: fn() -> &'static str,
    configure: fn(RaceRetryBuilder) -> RaceRetryBuilder,
    /// The registry's policy, held for good: a call reaches it in one load.
    race: OnceLock<&'static RaceRetry>,
}

impl RaceSite {
    /// A site whose policy is called `name()` and set up by `configure` on first use.
    pub const fn new(
        name: fn() -> &'static str,
        configure: fn(RaceRetryBuilder) -> RaceRetryBuilder,
    ) -> Self {
        RaceSite {
            name,
            configure,
            race: OnceLock::new(),
        }
    }

    /// The site's policy.
    #[inline]
    pub fn race(&'static self) -> RaceCall {
        RaceCall(match self.race.get() {
            Some(race) => race,
            None => self.set_up(),
        })
    }

    /// Sets the policy up; its events are emitted once it is in place, so that a subscriber may
    /// call this site.
    #[cold]
    fn set_up(&'static self) -> &'static RaceRetry {
        crate::later::hold(|| {
            self.race
                .get_or_init(|| crate::race_retry::set_up((self.name)(), self.configure))
        })
    }
}

/// The policy of a `#[race_retry]` site, with the calls generated code makes: those of
/// [`RaceRetry::run`] and [`RaceRetry::run_if`], with a reader of each error's
/// [`RetryHint`](crate::RetryHint) (`hint_reader!`). The attempts come first, so that the
/// compiler learns the error type from them before it reads a closure's parameter.
#[derive(Debug, Clone, Copy)]
pub struct RaceCall(pub &'static RaceRetry);

impl RaceCall {
    /// [`RaceRetry::run`], with each error's hint.
    #[inline(always)]
    pub fn run_with<M, Fut, T, E, H>(
        self,
        make: M,
        hint: H,
    ) -> Race<M, Fut, E, RaceHinted<Always, H>>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
        H: Fn(&E) -> Option<std::time::Duration>,
    {
        self.0.run_judged(make, RaceHinted::new(Always, hint))
    }

    /// [`RaceRetry::run_if`], with each error's hint.
    #[inline(always)]
    pub fn run_if_with<M, Fut, T, E, P, H>(
        self,
        make: M,
        retryable: P,
        hint: H,
    ) -> Race<M, Fut, E, RaceHinted<P, H>>
    where
        M: MakeAttempt<Fut>,
        Fut: Future<Output = Result<T, E>>,
        E: FromRejected,
        P: Fn(&E) -> bool,
        H: Fn(&E) -> Option<std::time::Duration>,
    {
        self.0.run_judged(make, RaceHinted::new(retryable, hint))
    }
}

impl fmt::Debug for RaceSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaceSite")
            .field("name", &self.name)
            .field("race", &self.race.get())
            .finish_non_exhaustive()
    }
}

/// Each attempt's own copy of an argument: `&T` and `&self` are copied, owned values cloned.
#[diagnostic::on_unimplemented(
    message = "`#[race_retry]` gives every attempt its own copy of each argument, and `{Self}` cannot be cloned",
    label = "this argument is cloned for each attempt",
    note = "take it by reference (`&T`), share it in an `Arc`, or make it `Clone` (for a generic type, add a `Clone` bound)"
)]
pub trait AttemptArg: Clone {}

impl<T: Clone> AttemptArg for T {}

/// An attempt's copy of an argument.
#[inline(always)]
pub fn attempt_arg<T: AttemptArg>(value: &T) -> T {
    value.clone()
}
