//! Keyed breakers: one breaker per distinct key (say, per host), created on first use and
//! looked up without a lock. The table is in `table.rs`, eviction in `evict.rs`, what can be a
//! key (and how a breaker holds it) in `key.rs`.

mod evict;
mod key;
mod table;

pub use key::BreakerKey;
pub(crate) use key::Key;

use std::fmt;
use std::hash::BuildHasher;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use crate::breaker::breaker::Breaker;
use crate::breaker::builder::Config;
use table::{Entry, Table};

/// A family of breakers with one configuration and one breaker per key.
///
/// Lookups are lock-free: a lookup of a key held reads one slot of the family's table and the
/// key's breaker, which holds the key itself (in place when short) beside its reference count,
/// so that a family of a million keys answers in about two cache misses. Keys are hashed with
/// `foldhash` under a seed drawn at random for each family, so that keys taken from requests
/// cannot be chosen to collide.
///
/// A key whose breaker holds nothing worth keeping and that was unused for about `idle_timeout`
/// is evicted by a sweep that runs as time passes (on the blocking pool when a tokio runtime is
/// at hand). A breaker holds nothing worth keeping when it is closed without recent errors, or
/// open with its open time passed (its next call would be a probe): so a host that failed and is
/// never called again does not stay for good. Forced breakers, open ones within their open time
/// and closed ones with errors in their window are never evicted, nor is a breaker that calls in
/// flight (or any other holder of its `Arc`) still use: their outcomes land on the breaker that
/// the key's later calls get, and a lookup never returns a breaker that the family no longer
/// holds.
///
/// The family never holds more than `max_keys` keys. When it is full, a new key makes room by
/// evicting the keys unused for longest among those holding nothing worth keeping, however
/// recently used; when there are none, the new key gets a breaker that is not kept (and a
/// `tracing` warning says so, at most once a minute). An evicted key's memory is given back when
/// the table is next copied: when it fills up with evicted keys, or when eviction leaves it
/// holding fewer live keys than evicted ones.
///
/// ```
/// use resiliency::Breaker;
///
/// let hosts = Breaker::builder("per-host").error_threshold(1).build_keyed().unwrap();
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let a = hosts.breaker("a.example");
/// a.force_open();
/// assert!(hosts.breaker("b.example").state() == resiliency::breaker::State::Closed);
/// assert_eq!(hosts.len(), 2);
/// # });
/// ```
pub struct KeyedBreaker {
    inner: Arc<Inner>,
}

/// What a family's breakers share besides their options.
pub(crate) struct Family {
    /// The family's series: one set for every key.
    pub(crate) meter: crate::breaker::meter::Handles,
}

struct Inner {
    name: Arc<str>,
    family: Family,
    /// The options in force, which a new key's breaker starts with.
    config: ArcSwap<Config>,
    /// Seeded at random for each family.
    hasher: foldhash::fast::RandomState,
    /// The table, replaced by a fresh copy (under `writer`) when it fills up or eviction leaves
    /// it mostly holding evicted keys.
    table: ArcSwap<Table>,
    /// Keys held, not evicted: never above `max_keys`. Changed under `writer`.
    live: AtomicUsize,
    /// Held to set a slot, mark a breaker evicted or replace the table: lookups take no lock.
    writer: Mutex<Writer>,
    /// Advances once per `idle_timeout / IDLE_GENERATIONS`; each breaker remembers the one it
    /// was last used in.
    generation: AtomicU32,
    clock: Mutex<Clock>,
    /// Held while sweeping: one sweep at a time.
    sweeping: Mutex<()>,
    /// A sweep is queued on the blocking pool: at most one waits at a time, however often the
    /// generation moves.
    queued: AtomicBool,
}

/// The state kept under the writer lock.
struct Writer {
    /// Slots set in the current table: live keys and the tombstones of evicted ones.
    set: usize,
    /// Moves each time the table is replaced.
    version: u64,
}

/// When the generation last advanced, when a full family may look for keys to evict again, and
/// when it last warned that a key's breaker was not kept.
struct Clock {
    tick: Option<Instant>,
    next_room: Option<Instant>,
    warned: Option<Instant>,
    not_kept: u64,
}

/// A breaker unused for this many generations (`idle_timeout` in all) may be evicted.
const IDLE_GENERATIONS: u32 = 16;
/// Lookups (per thread) between two looks at the clock on the hit path.
const HITS_PER_TICK_CHECK: u32 = 256;
/// A full family that found no key to evict looks again after at most this long (sooner when
/// a key's open time or error window ends sooner).
const ROOM_RECHECK: Duration = Duration::from_secs(1);
/// A full family warns that new keys' breakers are not kept at most once per this long.
const WARN_EVERY: Duration = Duration::from_secs(60);

thread_local! {
    static HITS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `entry`'s breaker, unless a sweep is evicting it. The fence pairs with the one in
/// [`Inner::sweep`]: either the sweep sees this holder (and keeps the breaker) or this sees the
/// sweep's mark.
#[inline]
fn unless_evicted(entry: &Entry) -> Option<Arc<Breaker>> {
    let breaker = entry.breaker.clone();
    fence(Ordering::SeqCst);
    (!entry.is_evicted()).then_some(breaker)
}

/// Drops a table that was replaced, once the lookups still reading it are done (they hold it
/// for one probe), so that the references it holds are dropped here rather than on their path.
/// A reader that holds it longer (an iteration over [`KeyedBreaker::breakers`], say) drops it
/// instead; until then its breakers count one holder more, so no sweep evicts them.
fn retire(old: Arc<Table>) {
    for _ in 0..1_000 {
        if Arc::strong_count(&old) == 1 {
            break;
        }
        std::thread::yield_now();
    }
}

/// What an insert found under the writer lock.
enum Insert {
    /// The key is held: its breaker.
    Held(Arc<Breaker>),
    /// The new breaker was placed, in a table that replaced this one.
    Placed(Option<Arc<Table>>),
    /// The family is full.
    Full,
}

impl KeyedBreaker {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        let table = Table::for_keys(0, config.max_keys);
        KeyedBreaker {
            inner: Arc::new(Inner {
                name: config.name.clone(),
                family: Family {
                    meter: crate::breaker::meter::handles(&config.name),
                },
                config: ArcSwap::new(config),
                hasher: foldhash::fast::RandomState::default(),
                table: ArcSwap::from_pointee(table),
                live: AtomicUsize::new(0),
                writer: Mutex::new(Writer { set: 0, version: 0 }),
                generation: AtomicU32::new(0),
                clock: Mutex::new(Clock {
                    tick: None,
                    next_room: None,
                    warned: None,
                    not_kept: 0,
                }),
                sweeping: Mutex::new(()),
                queued: AtomicBool::new(false),
            }),
        }
    }

    /// The breaker for `key`, created on first use. The key's text names its breaker: see
    /// [`BreakerKey`] for the types that can be keys.
    pub fn breaker<K: BreakerKey + ?Sized>(&self, key: &K) -> Arc<Breaker> {
        key.with_text(|key| self.breaker_for(key))
    }

    fn breaker_for(&self, key: &str) -> Arc<Breaker> {
        let inner = &*self.inner;
        let hash = inner.hasher.hash_one(key.as_bytes());
        if let Some(breaker) = self.held(hash, key.as_bytes(), true) {
            let hits = HITS.with(|h| {
                let n = h.get().wrapping_add(1);
                h.set(n);
                n
            });
            if hits.is_multiple_of(HITS_PER_TICK_CHECK) {
                self.tick(Instant::now());
            }
            return breaker;
        }
        self.insert(key, hash)
    }

    /// The breaker the family holds for `key` (of hash `hash`), if any, recorded as used now
    /// when `use_it`. Lock-free, unless an entry of the key carries an eviction mark that a
    /// sweep may yet lift: then the writer lock, under which no mark changes, settles it.
    #[inline]
    fn held(&self, hash: u64, key: &[u8], use_it: bool) -> Option<Arc<Breaker>> {
        let inner = &*self.inner;
        let mut marked = false;
        {
            let table = inner.table.load();
            if let Some(entry) = table.find(hash, key, &mut marked) {
                if let Some(breaker) = unless_evicted(entry) {
                    if use_it {
                        entry.used_in(inner.generation.load(Ordering::Relaxed));
                    }
                    return Some(breaker);
                }
                marked = true;
            }
        }
        if !marked {
            return None;
        }
        let _writer = lock(&inner.writer);
        let table = inner.table.load();
        let entry = table.find(hash, key, &mut marked)?;
        if use_it {
            entry.used_in(inner.generation.load(Ordering::Relaxed));
        }
        Some(entry.breaker.clone())
    }

    /// The breaker for `key` if it exists, without creating one.
    pub fn get<K: BreakerKey + ?Sized>(&self, key: &K) -> Option<Arc<Breaker>> {
        key.with_text(|key| {
            self.held(
                self.inner.hasher.hash_one(key.as_bytes()),
                key.as_bytes(),
                false,
            )
        })
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Puts `config` in force for the family: for the breakers it holds (each keeps its state;
    /// see [`Breaker::reconfigure`]) and the ones it creates from now on.
    pub(crate) fn reconfigure(&self, config: Arc<Config>) {
        let max_keys = config.max_keys;
        self.inner.config.store(config.clone());
        for entry in self.inner.table.load_full().entries() {
            if !entry.is_evicted() {
                entry.breaker.reconfigure(config.clone());
            }
        }
        // A lowered `max_keys` holds at once for the keys that hold nothing worth keeping; the
        // others go as they become evictable (new keys meanwhile get breakers not kept).
        if self.inner.live.load(Ordering::Relaxed) > max_keys {
            self.evict_for_room(Instant::now());
        }
    }

    /// The most keys the family holds at once (`max_keys`, as in force now).
    pub fn max_keys(&self) -> usize {
        self.inner.config.load().max_keys
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        self.inner.live.load(Ordering::Relaxed)
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key held, with its breaker.
    pub fn breakers(&self) -> Vec<(Arc<str>, Arc<Breaker>)> {
        self.inner
            .table
            .load_full()
            .entries()
            .filter(|entry| !entry.is_evicted())
            .filter_map(|entry| {
                let b = unless_evicted(entry)?;
                Some((b.key.as_ref()?.to_arc(), b))
            })
            .collect()
    }

    fn insert(&self, key: &str, hash: u64) -> Arc<Breaker> {
        let inner = &*self.inner;
        let now = Instant::now();
        self.tick(now);
        let mut room_made = false;
        loop {
            let config = inner.config.load_full();
            // Made before the lock is taken: no lock is held while the metrics recorder runs.
            let fresh = Arc::new(Breaker::of_family(
                config.clone(),
                Some(Key::new(key)),
                Some(&inner.family),
            ));
            match self.place(hash, key, &fresh, &config) {
                Insert::Held(breaker) => return breaker,
                Insert::Placed(old) => {
                    if let Some(old) = old {
                        retire(old);
                    }
                    // The settings changed while this breaker was made: `reconfigure` may have
                    // passed it by.
                    let now_in_force = inner.config.load_full();
                    if !Arc::ptr_eq(&now_in_force, &config) {
                        fresh.reconfigure(now_in_force);
                    }
                    return fresh;
                }
                Insert::Full if room_made => return self.not_kept(key, fresh, &config, now),
                Insert::Full => {
                    room_made = true;
                    self.make_room(now);
                }
            }
        }
    }

    /// Under the writer lock: the breaker held for `key`, or `fresh` placed in the table (a
    /// copy of it when it has no room left), or that the family is full.
    fn place(&self, hash: u64, key: &str, fresh: &Arc<Breaker>, config: &Config) -> Insert {
        let inner = &*self.inner;
        let mut writer = lock(&inner.writer);
        let mut table = inner.table.load_full();
        // Under the lock no sweep marks a breaker: a marked one is evicted.
        if let Some(held) = table.find(hash, key.as_bytes(), &mut false) {
            held.used_in(inner.generation.load(Ordering::Relaxed));
            return Insert::Held(held.breaker.clone());
        }
        let live = inner.live.load(Ordering::Relaxed);
        if live >= config.max_keys {
            return Insert::Full;
        }
        let mut old = None;
        if !table.has_room(writer.set) {
            let copy = Arc::new(table.copy(live + 1, config.max_keys, &inner.hasher));
            inner.table.store(copy.clone());
            writer.set = live;
            writer.version += 1;
            old = Some(std::mem::replace(&mut table, copy));
        }
        table.place(
            hash,
            fresh.clone(),
            inner.generation.load(Ordering::Relaxed),
        );
        writer.set += 1;
        inner.live.store(live + 1, Ordering::Relaxed);
        Insert::Placed(old)
    }

    /// `fresh`, a breaker for `key` that is not kept: the family is full and no key can be
    /// evicted.
    fn not_kept(
        &self,
        key: &str,
        fresh: Arc<Breaker>,
        config: &Config,
        now: Instant,
    ) -> Arc<Breaker> {
        let inner = &*self.inner;
        let not_kept = {
            let mut clock = lock(&inner.clock);
            clock.not_kept += 1;
            match clock.warned {
                Some(at) if now.saturating_duration_since(at) < WARN_EVERY => None,
                _ => {
                    clock.warned = Some(now);
                    Some(std::mem::take(&mut clock.not_kept))
                }
            }
        };
        if let Some(not_kept) = not_kept {
            tracing::warn!(
                target: "resiliency::breaker",
                name = &*inner.name,
                key,
                max_keys = config.max_keys,
                not_kept,
                "keyed breaker is full and no key can be evicted; new keys get breakers that are not kept"
            );
        }
        fresh
    }
}

impl fmt::Debug for KeyedBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBreaker")
            .field("name", &self.name())
            .field("keys", &self.len())
            .finish_non_exhaustive()
    }
}
