//! Eviction in a keyed family: the generation that advances as time passes, the sweeps that
//! evict idle keys (on the blocking pool when a tokio runtime is at hand, one queued at a time),
//! room made when the family is full, and the table replaced by a copy without the evicted keys
//! when they outnumber the live ones.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::table::Entry;

use super::{lock, retire, Inner, KeyedBreaker, IDLE_GENERATIONS, ROOM_RECHECK};

impl KeyedBreaker {
    /// Evicts, now, every key unused since the sweep before the previous one whose breaker
    /// holds nothing worth keeping (closed without recent errors, or open with its open time
    /// passed), so calling it twice evicts every such key unused in between. Returns how many
    /// keys were evicted.
    pub fn evict_idle(&self) -> usize {
        self.inner.sweep(IDLE_GENERATIONS / 2, Sweep::Idle, None)
    }

    /// Advances the generation by the periods elapsed since the last advance, and sweeps when
    /// it moved: on the blocking pool when a tokio runtime is at hand (one sweep queued at a
    /// time), here otherwise.
    pub(super) fn tick(&self, now: Instant) {
        let period = self.inner.period();
        let elapsed = {
            let mut clock = match self.inner.clock.try_lock() {
                Ok(clock) => clock,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return,
            };
            let last = *clock.tick.get_or_insert(now);
            let periods = now.saturating_duration_since(last).as_nanos() / period.as_nanos();
            if periods == 0 {
                return;
            }
            clock.tick = Some(now);
            u32::try_from(periods).unwrap_or(u32::MAX)
        };
        self.inner.generation.fetch_add(elapsed, Ordering::Relaxed);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                if self.inner.queued.swap(true, Ordering::AcqRel) {
                    return;
                }
                // Clears `queued` once the sweep holds the lock, or when the runtime drops it unrun.
                let queued = Queued(self.inner.clone());
                drop(
                    handle.spawn_blocking(move || {
                        queued.0.clone().sweep(0, Sweep::Idle, Some(queued))
                    }),
                );
            }
            Err(_) => {
                self.inner.sweep(0, Sweep::Idle, None);
            }
        }
    }
    /// The family is full: evict the keys unused for longest among those that hold nothing
    /// worth keeping, however recently used. A look that finds none is not repeated until a
    /// key may have become evictable.
    pub(super) fn make_room(&self, now: Instant) {
        {
            let clock = lock(&self.inner.clock);
            if clock.next_room.is_some_and(|at| now < at) {
                return;
            }
        }
        self.evict_for_room(now);
    }

    /// [`make_room`](Self::make_room) now, whenever the last look was: for a lowered
    /// `max_keys`, which holds at once for the keys that hold nothing worth keeping.
    pub(super) fn evict_for_room(&self, now: Instant) {
        let inner = &*self.inner;
        let max_keys = inner.config.load().max_keys;
        // A lowered `max_keys`: the keys past it go too, so that the bound holds again.
        let excess = inner.live.load(Ordering::Relaxed).saturating_sub(max_keys);
        let target = (max_keys / 32).max(1) + excess;
        let mut next = None;
        let evicted = inner.sweep(
            0,
            Sweep::Room {
                target,
                next: &mut next,
            },
            None,
        );
        if evicted == 0 {
            let recheck = next
                .unwrap_or(ROOM_RECHECK)
                .min(ROOM_RECHECK)
                .min(inner.period());
            lock(&inner.clock).next_room = Some(now + recheck);
        }
    }
}

/// A queued sweep: clears [`Inner::queued`] when dropped.
struct Queued(Arc<Inner>);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.queued.store(false, Ordering::Release);
    }
}

/// What a sweep evicts.
enum Sweep<'a> {
    /// Keys unused for `IDLE_GENERATIONS` that hold nothing worth keeping.
    Idle,
    /// Up to about `target` keys that hold nothing worth keeping, the longest unused first;
    /// `next` is set to when one may become evictable, when none is now.
    Room {
        target: usize,
        next: &'a mut Option<Duration>,
    },
}

/// Ages kept apart when choosing the longest-unused keys; older ones count as this old.
const AGES: usize = 64;

impl Inner {
    /// The length of a generation.
    fn period(&self) -> Duration {
        (self.config.load().idle_timeout / IDLE_GENERATIONS).max(Duration::from_nanos(1))
    }

    /// Moves the generation on by `advance` and evicts what `mode` says.
    ///
    /// A breaker that anything outside the table still holds is never evicted: a call in flight
    /// holds its breaker, and its outcome must land on the breaker that the key's next calls use.
    /// The table is swept in chunks of slots, each under the writer lock, so that an insert waits
    /// for one chunk at most; a sweep that finds the table replaced by a copy (which holds no
    /// evicted key) starts again on the copy, a few times at most.
    fn sweep(&self, advance: u32, mode: Sweep<'_>, queued: Option<Queued>) -> usize {
        let _one_at_a_time = lock(&self.sweeping);
        // From here on, a tick that moves the generation queues the next sweep.
        drop(queued);
        let generation = self
            .generation
            .fetch_add(advance, Ordering::Relaxed)
            .wrapping_add(advance);
        let age = |entry: &Entry| entry.age(generation);
        // The youngest age that goes, and how many of that age may go (older ones all go).
        let (min_age, mut of_min_age) = match mode {
            Sweep::Idle => (IDLE_GENERATIONS, usize::MAX),
            Sweep::Room { target, next } => {
                let mut ages = [0usize; AGES];
                for entry in self.table.load_full().entries() {
                    if entry.is_evicted() {
                        continue;
                    }
                    match entry.breaker.idle_in() {
                        Some(Duration::ZERO) if Arc::strong_count(&entry.breaker) == 1 => {
                            ages[(age(entry) as usize).min(AGES - 1)] += 1;
                        }
                        // Held by a call (it may end at any time), or forced.
                        Some(Duration::ZERO) | None => {}
                        Some(soon) => *next = Some(next.map_or(soon, |n| n.min(soon))),
                    }
                }
                let mut taken = 0;
                let mut limit = None;
                for (a, &n) in ages.iter().enumerate().rev() {
                    if n > 0 && taken + n >= target {
                        limit = Some((a as u32, target - taken));
                        break;
                    }
                    taken += n;
                }
                match limit {
                    Some(limit) => limit,
                    None if taken > 0 => (0, usize::MAX),
                    None => return 0,
                }
            }
        };
        let mut evicted = 0;
        let mut gone = Vec::new();
        let mut version = lock(&self.writer).version;
        let mut restarts = 0;
        let mut at = 0;
        loop {
            {
                let writer = lock(&self.writer);
                let table = self.table.load();
                if writer.version != version {
                    if restarts == MAX_RESTARTS {
                        break;
                    }
                    restarts += 1;
                    version = writer.version;
                    at = 0;
                }
                if at >= table.slots() {
                    break;
                }
                for entry in table.entries_in(at..at + SWEEP_CHUNK) {
                    // A tombstone: evicted already.
                    if entry.is_evicted() {
                        continue;
                    }
                    let a = age(entry);
                    let goes = a >= min_age
                        && (a != min_age || of_min_age > 0)
                        && Arc::strong_count(&entry.breaker) == 1
                        && entry.breaker.idle_in() == Some(Duration::ZERO);
                    if !goes {
                        continue;
                    }
                    entry.mark();
                    fence(Ordering::SeqCst);
                    if Arc::strong_count(&entry.breaker) != 1 {
                        // A lookup took it meanwhile: it stays.
                        entry.unmark();
                        continue;
                    }
                    if a == min_age {
                        of_min_age -= 1;
                    }
                    gone.push(entry.breaker.clone());
                }
                self.live.fetch_sub(gone.len(), Ordering::Relaxed);
            }
            // Out of the lock: the metrics recorder runs here.
            evicted += gone.len();
            for breaker in gone.drain(..) {
                breaker.uncount();
            }
            at += SWEEP_CHUNK;
        }
        if evicted > 0 {
            let name = self.name.clone();
            // Emitted once no lock is held (a change of settings sweeps under the store's).
            crate::later::emit(
                move || tracing::debug!(target: "resiliency::breaker", name = &*name, evicted, "evicted idle keys"),
            );
            self.compact();
        }
        evicted
    }

    /// Replaces the table by a copy without the evicted keys' tombstones, sized for the live
    /// ones, when the evicted keys outnumber the live ones: a tombstone keeps its breaker's
    /// memory, and lengthens the probes that pass it, until the table is copied. The caller holds
    /// `sweeping`.
    fn compact(&self) {
        let old = {
            let mut writer = lock(&self.writer);
            let live = self.live.load(Ordering::Relaxed);
            if writer.set - live < live.max(1) {
                return;
            }
            let old = self.table.load_full();
            let copy = Arc::new(old.copy(live, self.config.load().max_keys, &self.hasher));
            self.table.store(copy);
            writer.set = live;
            writer.version += 1;
            old
        };
        retire(old);
    }
}

/// Slots swept under one hold of the writer lock.
const SWEEP_CHUNK: usize = 4096;
/// Times a sweep starts again on a copy of the table made meanwhile.
const MAX_RESTARTS: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Breaker;

    #[test]
    fn at_most_one_sweep_waits_however_often_the_generation_moves() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let _entered = rt.enter();
        let family = Breaker::builder("keyed.one_sweep")
            .idle_timeout(Duration::from_millis(2))
            .build_keyed()
            .unwrap();
        let start = Instant::now();
        {
            // Sweeps block behind this lock; each queued one holds the family's state.
            let _sweeping = family.inner.sweeping.lock().unwrap();
            for i in 0..1_000 {
                family.tick(start + Duration::from_millis(i));
            }
            assert!(
                Arc::strong_count(&family.inner) <= 3,
                "{} sweeps queued",
                Arc::strong_count(&family.inner) - 1
            );
        }
        drop(rt);
        assert_eq!(Arc::strong_count(&family.inner), 1);
    }
}
