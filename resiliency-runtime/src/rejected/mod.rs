//! The one error every policy refuses a call with: [`Rejected`], what it says ([`RejectedKind`],
//! its accessors) and the reasons behind it. How it reads (Display) is in `display.rs`.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

mod display;
#[cfg(test)]
mod tests;

/// A call that a policy refused or abandoned.
///
/// Every annotated function returns `Err(E::from(rejected))` when a policy stops a call, so `E` must
/// implement `From<Rejected>`. `Rejected` is `std::error::Error + Send + Sync + 'static`, which makes
/// `Box<dyn Error + Send + Sync>` and `anyhow::Error` work without any code from you.
///
/// Its `Display` says what was refused and why:
///
/// ```
/// # use resiliency::{Breaker, Rejected};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let breaker = Breaker::builder("payments").build().unwrap();
/// breaker.force_open();
/// let err = breaker.call(async { Ok::<(), Rejected>(()) }).await.unwrap_err();
/// assert!(err.is_circuit_open());
/// assert_eq!(err.to_string(), "circuit breaker `payments` is forced open");
/// # }
/// ```
#[derive(Clone)]
pub struct Rejected {
    // Boxed: an error type that holds a `Rejected` stays one pointer bigger, which keeps every
    // guarded call's output small (the box is made only when a call is refused).
    reason: Box<Reason>,
}

#[derive(Clone, Debug)]
pub(crate) enum Reason {
    Open {
        circuit: Circuit,
        retry_in: Duration,
    },
    ForcedOpen {
        circuit: Circuit,
    },
    ProbesBusy {
        circuit: Circuit,
    },
    Timeout {
        circuit: Circuit,
        after: Duration,
    },
    TooBusy {
        name: &'static str,
        signal: BusySignal,
    },
    /// `#[race_retry]`'s `total` passed with no attempt successful.
    Deadline {
        name: &'static str,
        total: Duration,
        attempts: u32,
    },
    /// `#[race_retry]`'s `each` passed for the last attempt running.
    AttemptTimeout {
        name: &'static str,
        each: Duration,
    },
    /// A rate limit refused the call: its permit frees in `retry_after`.
    RateLimited {
        name: &'static str,
        rate: resiliency_rules::Rate,
        retry_after: Duration,
    },
    /// `#[timeout]`'s `total` passed before the call answered.
    Elapsed {
        name: &'static str,
        total: Duration,
    },
}

/// Which `#[too_busy]` signal refused a call.
#[derive(Copy, Clone, Debug)]
pub(crate) enum BusySignal {
    /// The runtime's smoothed lag is above `max_lag` (refused with a probability that grows to 1
    /// at twice `max_lag`).
    Lag { lag: Duration, max_lag: Duration },
    /// `limit` calls of the function are already in flight; `auto` when the limit is learned.
    InFlight { limit: u32, auto: bool },
    /// The function's recent mean latency is above `max_latency`.
    Latency {
        mean: Duration,
        max_latency: Duration,
    },
}

/// Takes one unit of tokio's cooperative budget for a refusal, as tokio's own resources do for
/// each value they hand out: `Ready` when the refusal may be returned now, `Pending` (the task
/// woken to come back) when the task has spent its budget and should yield first. A loop that
/// meets nothing but refusals thus yields now and then, and timers and other tasks on its worker
/// keep running. Outside a tokio runtime (another executor, no runtime at all) the budget is
/// unlimited: always `Ready`.
#[inline]
pub(crate) fn poll_refusal(cx: &mut Context<'_>) -> Poll<()> {
    let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
    coop.made_progress();
    Poll::Ready(())
}

/// The links of a source chain [`Rejected::find_in`] looks at, at most.
const MAX_CHAIN: usize = 64;

/// Which `#[too_busy]` signal refused a call: [`Rejected::busy_signal`].
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    /// The runtime lags past `max_lag`.
    Lag,
    /// `max_in_flight` calls were already in flight (a fixed or a learned limit).
    InFlight,
    /// Recent calls took longer than `max_latency` on average.
    Latency,
}

impl BusySignal {
    fn public(&self) -> Signal {
        match self {
            BusySignal::Lag { .. } => Signal::Lag,
            BusySignal::InFlight { .. } => Signal::InFlight,
            BusySignal::Latency { .. } => Signal::Latency,
        }
    }
}

/// The name (and key) of a breaker, as carried by a [`Rejected`].
#[derive(Clone, Debug)]
pub(crate) struct Circuit {
    pub(crate) name: Arc<str>,
    pub(crate) key: Option<crate::breaker::Key>,
}

impl fmt::Display for Circuit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "circuit breaker `{}`", self.name)?;
        if let Some(key) = &self.key {
            write!(f, " for key `{key}`")?;
        }
        Ok(())
    }
}

/// The error type of an annotated function (or of a call through a policy) must be able to
/// carry a [`Rejected`]: `From<Rejected>`, spelled out for the compiler's message. Generated code
/// names it through `__private`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a `resiliency::Rejected`",
    label = "this error type needs `impl From<resiliency::Rejected>`",
    note = "add `impl From<resiliency::Rejected> for {Self}` if `{Self}` is defined in your crate; otherwise (`String`, `std::io::Error`, another crate's error) wrap it in an error type of your own with this impl, or return `Box<dyn std::error::Error + Send + Sync>` or `anyhow::Error`, which have it"
)]
pub trait FromRejected: From<Rejected> {}

impl<E: From<Rejected>> FromRejected for E {}

/// Which policy refused a call, and how. Returned by [`Rejected::kind`].
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RejectedKind {
    /// A circuit breaker is open (or forced open): the call did not run.
    CircuitOpen,
    /// A circuit breaker is half-open and all its probe slots are taken: the call did not run.
    CircuitHalfOpen,
    /// A call ran past its time limit (`#[timeout]`'s `total`, a breaker's `timeout`, a raced
    /// attempt's `each`) and was abandoned: its body was dropped.
    Timeout,
    /// `#[too_busy]` shed the call: the runtime lags, too many calls are in flight, or recent
    /// calls are too slow ([`Rejected::busy_signal`] says which). The call did not run.
    TooBusy,
    /// A rate limit refused the call: the calls of its period are spent
    /// ([`Rejected::retry_after`] says when the next permit frees). The call did not run.
    RateLimited,
    /// `#[race_retry]`'s overall deadline (`total`) passed before any attempt succeeded; the
    /// attempts still running were cancelled.
    Deadline,
}

impl Rejected {
    pub(crate) fn new(reason: Reason) -> Self {
        Rejected {
            reason: Box::new(reason),
        }
    }

    /// The `Rejected` inside `error`, if any: `error` itself, or the first error of its
    /// [`source`](std::error::Error::source) chain that is one.
    ///
    /// Works for every error that keeps the `Rejected` as itself or as a source:
    /// `Box<dyn Error + Send + Sync>` (`find_in(&*boxed)`), `anyhow::Error` made from a `Rejected`
    /// or an error that holds one (`?`, `anyhow!(rejected)`, with or without context:
    /// `find_in(&*error)` or `find_in(error.as_ref())`), and your own enums whose `source()`
    /// returns it. An `anyhow::Error` made from a box (`from_boxed`, `anyhow!(boxed)`) takes
    /// [`find_in_anyhow`](Self#method.find_in_anyhow). An enum that holds a `Rejected` without
    /// returning it from `source()` hides it: match on the variant instead. The search stops
    /// after 64 links, so a chain that loops (a `source()` that returns its own error) ends it.
    ///
    /// ```
    /// use std::error::Error;
    /// use std::fmt;
    /// use resiliency::{Breaker, Rejected};
    ///
    /// /// An application error that keeps the refusal as its source.
    /// #[derive(Debug)]
    /// struct Failed(Rejected);
    ///
    /// impl fmt::Display for Failed {
    ///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    ///         f.write_str("the payment failed")
    ///     }
    /// }
    ///
    /// impl Error for Failed {
    ///     fn source(&self) -> Option<&(dyn Error + 'static)> {
    ///         Some(&self.0)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let breaker = Breaker::builder("payments").build().unwrap();
    /// breaker.force_open();
    /// let refused = breaker.call(async { Ok::<(), Rejected>(()) }).await.unwrap_err();
    ///
    /// let anyhow = anyhow::Error::new(refused.clone()).context("charging the card");
    /// assert!(Rejected::find_in(&*anyhow).unwrap().is_circuit_open());
    ///
    /// let boxed: Box<dyn Error + Send + Sync> = Box::new(Failed(refused));
    /// assert!(Rejected::find_in(&*boxed).unwrap().is_circuit_open());
    ///
    /// let other: Box<dyn Error + Send + Sync> = "a plain error".into();
    /// assert!(Rejected::find_in(&*other).is_none());
    /// # }
    /// ```
    pub fn find_in<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Rejected> {
        let mut next = Some(error);
        // Bounded: a `source()` that returns its own error (or an earlier one) makes a chain
        // that never ends.
        for _ in 0..MAX_CHAIN {
            let error = next?;
            if let Some(rejected) = error.downcast_ref::<Rejected>() {
                return Some(rejected);
            }
            next = error.source();
        }
        None
    }

    /// With the `anyhow` feature: the `Rejected` inside an `anyhow::Error`, however it was made.
    ///
    /// [`find_in`](Self::find_in)`(&*error)` finds it when the `anyhow::Error` was made from the
    /// `Rejected` itself or from an error whose chain holds it (`?`, `anyhow!(rejected)`,
    /// `Error::new`, `.context`). A `Box<dyn Error + Send + Sync>` (a tower layer's error) made
    /// into one with `anyhow::Error::from_boxed` or `anyhow!(boxed)` hides the boxed error from
    /// the chain `&*error` starts; this finds it there too, with or without context. A message
    /// made from the refusal's text (`anyhow!("{rejected}")`) holds no `Rejected`.
    ///
    /// ```
    /// # use resiliency::{Breaker, Rejected};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let breaker = Breaker::builder("inventory").build().unwrap();
    /// # breaker.force_open();
    /// # let refused = breaker.call(async { Ok::<(), Rejected>(()) }).await.unwrap_err();
    /// let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(refused);
    /// let error = anyhow::Error::from_boxed(boxed).context("calling the inventory");
    /// assert!(Rejected::find_in(&*error).is_none());
    /// assert!(Rejected::find_in_anyhow(&error).unwrap().is_circuit_open());
    /// # }
    /// ```
    #[cfg(feature = "anyhow")]
    #[cfg_attr(docsrs, doc(cfg(feature = "anyhow")))]
    pub fn find_in_anyhow(error: &anyhow::Error) -> Option<&Rejected> {
        if let Some(rejected) = error.downcast_ref::<Rejected>() {
            return Some(rejected);
        }
        let boxed = error.downcast_ref::<Box<dyn std::error::Error + Send + Sync>>();
        boxed
            .and_then(|boxed| Self::find_in(&**boxed))
            .or_else(|| Self::find_in(&**error))
    }

    /// Which policy refused the call, and how.
    pub fn kind(&self) -> RejectedKind {
        match *self.reason {
            Reason::Open { .. } | Reason::ForcedOpen { .. } => RejectedKind::CircuitOpen,
            Reason::ProbesBusy { .. } => RejectedKind::CircuitHalfOpen,
            Reason::Timeout { .. } | Reason::AttemptTimeout { .. } | Reason::Elapsed { .. } => {
                RejectedKind::Timeout
            }
            Reason::TooBusy { .. } => RejectedKind::TooBusy,
            Reason::RateLimited { .. } => RejectedKind::RateLimited,
            Reason::Deadline { .. } => RejectedKind::Deadline,
        }
    }

    /// True when `#[too_busy]` shed the call.
    pub fn is_too_busy(&self) -> bool {
        self.kind() == RejectedKind::TooBusy
    }

    /// The signal that refused a `#[too_busy]` call, as the guard counts it.
    pub(crate) fn busy_reason(&self) -> Option<&BusySignal> {
        match &*self.reason {
            Reason::TooBusy { signal, .. } => Some(signal),
            _ => None,
        }
    }

    /// Which signal refused the call, when `#[too_busy]` shed it (else `None`).
    ///
    /// ```
    /// use resiliency::too_busy::{Signal, TooBusy};
    /// # use resiliency::Rejected;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let guard: &'static TooBusy =
    ///     Box::leak(Box::new(TooBusy::builder("search").max_in_flight(1).build().unwrap()));
    /// let slow = || guard.call(async {
    ///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    ///     Ok::<_, Rejected>(())
    /// });
    /// let (first, second) = tokio::join!(slow(), slow());
    /// assert!(first.is_ok());
    /// assert_eq!(second.unwrap_err().busy_signal(), Some(Signal::InFlight));
    /// # }
    /// ```
    pub fn busy_signal(&self) -> Option<Signal> {
        match &*self.reason {
            Reason::TooBusy { signal, .. } => Some(signal.public()),
            _ => None,
        }
    }

    /// True when a circuit breaker refused the call because it is open or half-open.
    pub fn is_circuit_open(&self) -> bool {
        matches!(
            self.kind(),
            RejectedKind::CircuitOpen | RejectedKind::CircuitHalfOpen
        )
    }

    /// True when the call ran past its time limit and was abandoned.
    pub fn is_timeout(&self) -> bool {
        self.kind() == RejectedKind::Timeout
    }

    /// True when a rate limit refused the call; [`retry_after`](Self::retry_after) says when its
    /// permit frees.
    pub fn is_rate_limited(&self) -> bool {
        self.kind() == RejectedKind::RateLimited
    }

    /// True when `#[race_retry]`'s overall deadline passed with no attempt successful.
    pub fn is_deadline(&self) -> bool {
        self.kind() == RejectedKind::Deadline
    }

    /// The name of the policy instance (for a breaker, its name) that refused the call.
    pub fn name(&self) -> &str {
        match &*self.reason {
            Reason::TooBusy { name, .. }
            | Reason::Deadline { name, .. }
            | Reason::AttemptTimeout { name, .. }
            | Reason::Elapsed { name, .. }
            | Reason::RateLimited { name, .. } => name,
            _ => self.circuit().map_or("", |c| &c.name),
        }
    }

    /// The key of the breaker that refused the call, for keyed breakers.
    pub fn key(&self) -> Option<&str> {
        self.circuit()?.key.as_deref()
    }

    /// How long until the policy will let a call through again, when it knows: for an open breaker,
    /// the time left until it half-opens; for a rate limit, until the call's permit frees. Useful for an HTTP `Retry-After` header.
    pub fn retry_after(&self) -> Option<Duration> {
        match *self.reason {
            Reason::Open { retry_in, .. } => Some(retry_in),
            Reason::RateLimited { retry_after, .. } => Some(retry_after),
            _ => None,
        }
    }

    fn circuit(&self) -> Option<&Circuit> {
        match &*self.reason {
            Reason::Open { circuit, .. }
            | Reason::ForcedOpen { circuit }
            | Reason::ProbesBusy { circuit }
            | Reason::Timeout { circuit, .. } => Some(circuit),
            Reason::TooBusy { .. }
            | Reason::Deadline { .. }
            | Reason::AttemptTimeout { .. }
            | Reason::Elapsed { .. }
            | Reason::RateLimited { .. } => None,
        }
    }
}
