//! Shedding said in the log, as a breaker's changes of state are: a guard that starts refusing
//! says so once at level warn, with the signal that refused in words; once it has refused nothing
//! for [`QUIET`], it says once at level info that it stopped, and how many calls it refused. Never
//! a line per refusal (those are debug events).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::time::Duration;

use super::too_busy::TooBusy;
use crate::rejected::Rejected;

/// How long a guard refuses nothing before its episode of shedding is over: episodes closer
/// together than this are one, so that a guard refusing now and then says so once.
pub(crate) const QUIET: Duration = Duration::from_secs(10);

/// The episode of shedding under way, written by refused calls only.
#[derive(Debug, Default)]
pub(super) struct Episode {
    /// When it began, in ns since the guard's base, plus one; 0 when the guard is not refusing.
    since: AtomicU64,
    /// The last refusal, likewise.
    last: AtomicU64,
    /// Calls refused since it began.
    refused: AtomicU64,
}

impl Episode {
    pub(super) const fn new() -> Self {
        Episode {
            since: AtomicU64::new(0),
            last: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }
}

impl TooBusy {
    /// A refusal stands: the first of an episode says so at warn.
    #[cold]
    pub(super) fn note_refusal(&self, rejected: &Rejected) {
        let episode = &self.counters.episode;
        let now = self.elapsed_ns() + 1;
        episode.last.fetch_max(now, AcqRel);
        episode.refused.fetch_add(1, Relaxed);
        if episode.since.load(Acquire) == 0
            && episode
                .since
                .compare_exchange(0, now, AcqRel, Acquire)
                .is_ok()
        {
            // Calls on the lag's fast path look for the episode's end while the cap is marked.
            self.lag_cap.mark();
            tracing::warn!(
                target: "resiliency::too_busy",
                name = self.name(),
                reason = %rejected,
                "load shedding started: calls are refused"
            );
        }
    }

    /// A call asks for admission off the fast path: an episode under way ends if nothing was
    /// refused for [`QUIET`]. (The lag's fast path asks through the lag cap, marked meanwhile.)
    #[inline(always)]
    pub(super) fn note_admitted(&self) {
        if self.counters.episode.since.load(Relaxed) != 0 {
            self.end_episode();
        }
    }

    #[cold]
    fn end_episode(&self) {
        let episode = &self.counters.episode;
        let now = self.elapsed_ns() + 1;
        let last = episode.last.load(Acquire);
        if now.saturating_sub(last) < QUIET.as_nanos() as u64 {
            return;
        }
        let since = episode.since.load(Acquire);
        if since == 0
            || episode
                .since
                .compare_exchange(since, 0, AcqRel, Acquire)
                .is_err()
        {
            return;
        }
        self.lag_cap.unmark();
        let refused = episode.refused.swap(0, AcqRel);
        let lasted = Duration::from_nanos(last.saturating_sub(since));
        tracing::info!(
            target: "resiliency::too_busy",
            name = self.name(),
            refused,
            lasted = ?lasted,
            "load shedding stopped: calls are admitted again"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rejected::{BusySignal, Reason};

    fn lag_refusal(guard: &TooBusy) -> Rejected {
        Rejected::new(Reason::TooBusy {
            name: guard.name(),
            signal: BusySignal::Lag {
                lag: Duration::from_millis(300),
                max_lag: Duration::from_millis(70),
            },
        })
    }

    /// A lag-only guard admits on its fast path, which reads no episode: the episode marks the
    /// lag cap, so that the fast path's one compare fails and the call looks for the end.
    #[tokio::test(start_paused = true)]
    async fn an_episode_of_a_lag_only_guard_ends_through_its_fast_path() {
        let guard: &'static TooBusy =
            Box::leak(Box::new(TooBusy::builder("episode-lag").build().unwrap()));
        assert!(guard.admit().is_ok(), "no lag off the monitor: admitted");
        let own = guard.max_lag_ns.load(Relaxed);
        assert!(guard.lag_cap.holds(own), "the fast path's compare holds");

        let _ = guard.refused(lag_refusal(guard));
        assert!(!guard.lag_cap.holds(own), "marked while the episode lasts");
        assert!(guard.lag_cap.holds_unmarked(own));
        tokio::time::sleep(QUIET / 2).await;
        assert!(guard.admit().is_ok());
        assert!(
            !guard.lag_cap.holds(own),
            "within the quiet time the episode goes on"
        );

        tokio::time::sleep(QUIET).await;
        assert!(guard.admit().is_ok());
        assert!(guard.lag_cap.holds(own), "over: unmarked");
        assert_eq!(guard.counters.episode.since.load(Relaxed), 0);
        assert_eq!(guard.counters.episode.refused.load(Relaxed), 0);
    }

    /// A refusal after the quiet time starts a new episode, said again.
    #[tokio::test(start_paused = true)]
    async fn refusals_closer_than_the_quiet_time_are_one_episode() {
        let guard: &'static TooBusy = Box::leak(Box::new(
            TooBusy::builder("episode-one")
                .max_latency(Duration::from_secs(1))
                .build()
                .unwrap(),
        ));
        let _ = guard.refused(lag_refusal(guard));
        let since = guard.counters.episode.since.load(Relaxed);
        for _ in 0..5 {
            tokio::time::sleep(QUIET / 2).await;
            let _ = guard.refused(lag_refusal(guard));
            assert!(guard.admit().is_ok());
        }
        assert_eq!(
            guard.counters.episode.since.load(Relaxed),
            since,
            "one episode"
        );
        assert_eq!(guard.counters.episode.refused.load(Relaxed), 6);
        tokio::time::sleep(QUIET).await;
        let admitted = guard.admit();
        assert!(admitted.is_ok());
        assert_eq!(guard.counters.episode.since.load(Relaxed), 0, "over");
    }
}
