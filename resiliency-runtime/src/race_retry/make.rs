//! What makes a raced call's attempts ([`MakeAttempt`]): a closure with no argument, or one told
//! the attempt's number ([`numbered`]).

/// What makes a raced call's attempts, one future per call, told which attempt it makes: every
/// `FnMut() -> Fut` (the attempt number unused), a closure wrapped in [`numbered`] (which gets
/// it), and the attempts of the `tower` layer.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot make a raced call's attempts",
    label = "a closure that makes one attempt's future per call, with no argument",
    note = "to choose by attempt number (0 for the first attempt, 1 for the first retry), wrap the closure: `resiliency::race_retry::numbered(|attempt| ...)`"
)]
pub trait MakeAttempt<Fut> {
    /// The future of attempt `attempt` (0 for the first attempt, 1 for the first retry, ...;
    /// [`Attempt::number`](super::Attempt::number) counts the same attempt from 1).
    fn make(&mut self, attempt: u32) -> Fut;
}

impl<M: FnMut() -> Fut, Fut> MakeAttempt<Fut> for M {
    #[inline(always)]
    fn make(&mut self, _attempt: u32) -> Fut {
        self()
    }
}

/// A closure that makes attempts from their number (0 for the first attempt, 1 for the first
/// retry, ...), for a raced call whose retries go elsewhere: another replica, another region
/// ("The Tail at Scale" sends the hedge to a different server). What `#[race_retry(attempt = n)]`
/// gives its body. The number counts from 0; [`observe`](fn@super::observe)'s
/// [`Attempt::number`](super::Attempt::number), the `attempt` field of the `tracing`
/// events and the `attempt` label of `resiliency_race_wins_total` count the same attempt from 1.
///
/// ```
/// use std::time::Duration;
/// use resiliency::race_retry::{numbered, RaceRetry};
///
/// static REPLICAS: [&str; 2] = ["10.0.0.1", "10.0.0.2"];
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let lookup = RaceRetry::builder("docs-replicas")
///     .retries(1)
///     .after(Duration::from_millis(100))
///     .total(Duration::from_secs(1))
///     .register()
///     .unwrap();
/// let served_by = lookup
///     .run(numbered(|attempt| async move {
///         let replica = REPLICAS[attempt as usize % REPLICAS.len()];
///         if replica == "10.0.0.1" {
///             tokio::time::sleep(Duration::from_secs(5)).await; // the first replica hangs
///         }
///         Ok::<_, resiliency::Rejected>(replica)
///     }))
///     .await;
/// assert_eq!(served_by.unwrap(), "10.0.0.2");
/// # }
/// ```
pub fn numbered<M, Fut>(make: M) -> Numbered<M>
where
    M: FnMut(u32) -> Fut,
{
    Numbered(make)
}

/// Attempts made from their number: see [`numbered`].
#[derive(Clone, Debug)]
pub struct Numbered<M>(M);

impl<M: FnMut(u32) -> Fut, Fut> MakeAttempt<Fut> for Numbered<M> {
    #[inline(always)]
    fn make(&mut self, attempt: u32) -> Fut {
        (self.0)(attempt)
    }
}
