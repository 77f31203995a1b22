//! Shedding said in the log, as a breaker's changes of state are: a guard that starts refusing
//! says so once at level warn, with the signal that refused in words; once it has refused nothing
//! for [`QUIET`], it says once at level info that it stopped, and how many calls it refused. Never
//! a line per refusal (those are debug events).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::time::Duration;

use super::guard::TooBusy;
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
            tracing::warn!(
                target: "resiliency::too_busy",
                name = self.name(),
                reason = %rejected,
                "load shedding started: calls are refused"
            );
        }
    }

    /// A call is admitted: an episode under way ends if nothing was refused for [`QUIET`].
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
