//! Seeing every attempt of a raced call, losers included: [`observe`] and [`Attempt`].

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

/// One attempt of a raced call, as [`observe`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The raced function's name (its path, or the `name` given to [`RaceRetry`](super::RaceRetry)).
    pub name: &'static str,
    /// 1 for the first attempt, 2 for the first retry, ...: counted from 1, as the `attempt`
    /// field of the `tracing` events and the `attempt` label of `resiliency_race_wins_total` are,
    /// and one more than the number `#[race_retry(attempt = n)]` and
    /// [`numbered`](super::numbered) give the body, which count from 0.
    pub number: u32,
    /// When it started, after the call started.
    pub started: Duration,
    /// How long it ran: until it returned, or until it was cancelled.
    pub elapsed: Duration,
    /// How it ended.
    pub outcome: Outcome,
}

/// How an [`Attempt`] ended.
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It returned `Ok` first: the call returned its value.
    Won,
    /// It returned an error worth another attempt.
    Failed,
    /// It returned an error that `retry_if` says is not worth another attempt: the call returned
    /// that error at once.
    NotRetryable,
    /// It ran past `each` and was cancelled: it counts as failed.
    TimedOut,
    /// It was still running when another attempt won, and was cancelled.
    Lost,
    /// It was still running when the call ended otherwise (the deadline passed, or an attempt
    /// failed with an error that is not worth another attempt), and was cancelled.
    Abandoned,
    /// Its code panicked: its body, the closure that made it, its destructor, or `retry_if` on
    /// its error. The panic goes on to the caller; the call's other attempts are dropped with it
    /// and reported as [`Abandoned`](Outcome::Abandoned).
    Panicked,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Won => "won",
            Outcome::Failed => "failed",
            Outcome::NotRetryable => "failed (not retryable)",
            Outcome::TimedOut => "timed out",
            Outcome::Lost => "lost (cancelled)",
            Outcome::Abandoned => "abandoned (cancelled)",
            Outcome::Panicked => "panicked",
        })
    }
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static LOG: RefCell<Vec<Attempt>> = const { RefCell::new(Vec::new()) };
}

/// Whether an [`observe`] is polling on this thread (a raced call reports its attempts then).
#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.with(Cell::get)
}

pub(crate) fn report(attempt: Attempt) {
    LOG.with(|log| {
        if let Ok(mut log) = log.try_borrow_mut() {
            log.push(attempt);
        }
    });
}

/// Runs `call` and returns its output with every attempt that raced calls made inside it
/// (including calls nested in it, in the order their attempts ended): when each started, how
/// long it ran, and how it ended, losers included.
///
/// The log is lent to the thread only while `call` is polled: should `call` panic, or the
/// [`Observed`] be dropped before it completes, the thread is left as it was (raced calls made
/// after it are not reported, and an enclosing `observe` keeps its log and gets what was reported
/// inside).
///
/// ```
/// use std::sync::LazyLock;
/// use std::time::Duration;
/// use resiliency::race_retry::{observe, After, Outcome, RaceRetry};
/// use resiliency::Rejected;
///
/// static LOOKUP: LazyLock<RaceRetry> = LazyLock::new(|| {
///     RaceRetry::builder("lookup")
///         .after(After::Fixed(Duration::from_millis(150)))
///         .total(Duration::from_millis(450))
///         .build()
///         .unwrap()
/// });
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut calls = 0;
/// let (result, attempts) = observe(LOOKUP.run(|| {
///     calls += 1;
///     let slow = calls == 1; // the first attempt hangs, the second answers in 20 ms
///     async move {
///         let wait = if slow { Duration::from_secs(5) } else { Duration::from_millis(20) };
///         tokio::time::sleep(wait).await;
///         Ok::<_, Rejected>(calls)
///     }
/// }))
/// .await;
/// assert_eq!(result.unwrap(), 2);
/// let outcomes: Vec<_> = attempts.iter().map(|a| (a.number, a.outcome)).collect();
/// assert_eq!(outcomes, [(2, Outcome::Won), (1, Outcome::Lost)]);
/// assert_eq!(attempts[0].started, Duration::from_millis(150));
/// # }
/// ```
pub fn observe<F: Future>(call: F) -> Observed<F> {
    Observed {
        call: Some(call),
        log: Vec::new(),
    }
}

pin_project! {
    /// The future of [`observe`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Observed<F> {
        // Dropped as soon as it is done, while the log is still lent: raced calls dropped with it
        // (under an outer timeout, say) report their attempts.
        #[pin]
        call: Option<F>,
        log: Vec<Attempt>,
    }
}

impl<F: Future> Future for Observed<F> {
    type Output = (F::Output, Vec<Attempt>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut call = this.call;
        let Some(future) = call.as_mut().as_pin_mut() else {
            panic!("`Observed` polled after it completed");
        };
        // The log is lent to the thread while the future is polled, and given back when `lent`
        // is dropped: after the poll, or while a panic unwinds out of it.
        let lent = Lent::new(this.log);
        let poll = future.poll(cx);
        if poll.is_ready() {
            call.set(None);
        }
        drop(lent);
        match poll {
            Poll::Ready(output) => Poll::Ready((output, std::mem::take(this.log))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// An observe's log, lent to the thread (what raced calls report to) for one poll. An outer
/// observe's log (if any) is put back when it is dropped, and gets the attempts reported meanwhile
/// too.
struct Lent<'a> {
    log: &'a mut Vec<Attempt>,
    before: usize,
    outer: Vec<Attempt>,
    outer_active: bool,
}

impl<'a> Lent<'a> {
    fn new(log: &'a mut Vec<Attempt>) -> Self {
        let before = log.len();
        let outer_active = ACTIVE.with(|a| a.replace(true));
        let outer =
            LOG.with(|lent| std::mem::replace(&mut *lent.borrow_mut(), std::mem::take(log)));
        Lent {
            log,
            before,
            outer,
            outer_active,
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let outer = std::mem::take(&mut self.outer);
        let mine = LOG.with(|lent| std::mem::replace(&mut *lent.borrow_mut(), outer));
        ACTIVE.with(|a| a.set(self.outer_active));
        if self.outer_active {
            if let Some(new) = mine.get(self.before..) {
                LOG.with(|lent| lent.borrow_mut().extend_from_slice(new));
            }
        }
        *self.log = mine;
    }
}
