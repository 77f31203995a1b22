//! Keyed breakers: one breaker per distinct key (say, per host), created on first use in a
//! lock-free map, and looked up without a lock. Eviction is in `evict.rs`, what can be a key in
//! `key.rs`.

mod evict;
mod key;

pub use key::BreakerKey;

use std::fmt;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use crate::breaker::breaker::Breaker;
use crate::breaker::builder::Config;

type Map = papaya::HashMap<Arc<str>, Arc<Breaker>, foldhash::fast::RandomState>;

/// A family of breakers with one configuration and one breaker per key.
///
/// Lookups are lock-free. A key whose breaker holds nothing worth keeping and that was unused
/// for about `idle_timeout` is evicted by a sweep that runs as time passes (on the blocking pool
/// when a tokio runtime is at hand). A breaker holds nothing worth keeping when it is closed
/// without recent errors, or open with its open time passed (its next call would be a probe):
/// so a host that failed and is never called again does not stay for good. Forced breakers,
/// open ones within their open time and closed ones with errors in their window are never
/// evicted, nor is a breaker that calls in flight (or any other holder of its `Arc`) still use:
/// their outcomes land on the breaker that the key's later calls get, and a lookup never
/// returns a breaker that the family no longer holds.
///
/// The family never holds more than `max_keys` keys. When it is full, a new key makes room by
/// evicting the keys unused for longest among those holding nothing worth keeping, however
/// recently used; when there are none, the new key gets a breaker that is not kept (and a
/// `tracing` warning says so, at most once a minute). The map gives memory back when eviction
/// leaves it mostly empty.
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
    /// The map, replaced by a fresh copy when eviction leaves it mostly empty or full of
    /// tombstones ([`Inner::shrink`]).
    map: ArcSwap<Map>,
    /// Keys held, plus slots taken by inserts under way: never above `max_keys`.
    held: AtomicUsize,
    /// The most keys the map held since it was made, and the keys removed from it since.
    peak: AtomicUsize,
    removed: AtomicUsize,
    /// Inserts hold it shared; replacing the map holds it exclusively, so that no insert lands
    /// in a map being replaced.
    inserting: RwLock<()>,
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
/// The map is replaced by a smaller copy when it holds at most 1/SHRINK_BELOW of its peak
/// (and the peak was at least `SHRINK_FROM` keys).
const SHRINK_BELOW: usize = 8;
const SHRINK_FROM: usize = 1024;

thread_local! {
    static HITS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn new_map() -> Map {
    // Blocking resizes: an incremental resize left unfinished makes every lookup search two
    // tables.
    papaya::HashMap::builder()
        .hasher(foldhash::fast::RandomState::default())
        .resize_mode(papaya::ResizeMode::Blocking)
        .build()
}

/// `breaker`, unless a sweep is evicting it. The fence pairs with the one in [`Inner::sweep`]:
/// either the sweep sees this holder (and keeps the breaker) or this sees the sweep's mark.
fn unless_evicted(breaker: &Arc<Breaker>) -> Option<Arc<Breaker>> {
    let breaker = breaker.clone();
    fence(Ordering::SeqCst);
    (!breaker.evicted.load(Ordering::Relaxed)).then_some(breaker)
}

impl KeyedBreaker {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        KeyedBreaker {
            inner: Arc::new(Inner {
                name: config.name.clone(),
                family: Family {
                    meter: crate::breaker::meter::handles(&config.name),
                },
                config: ArcSwap::new(config),
                map: ArcSwap::from_pointee(new_map()),
                held: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                removed: AtomicUsize::new(0),
                inserting: RwLock::new(()),
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
        let found = inner.map.load().pin().get(key).and_then(unless_evicted);
        if let Some(breaker) = found {
            let generation = inner.generation.load(Ordering::Relaxed);
            if breaker.seen.load(Ordering::Relaxed) != generation {
                breaker.seen.store(generation, Ordering::Relaxed);
            }
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
        self.insert(key)
    }

    /// The breaker for `key` if it exists, without creating one.
    pub fn get<K: BreakerKey + ?Sized>(&self, key: &K) -> Option<Arc<Breaker>> {
        key.with_text(|key| loop {
            match self.inner.map.load().pin().get(key) {
                None => return None,
                Some(breaker) => {
                    if let Some(breaker) = unless_evicted(breaker) {
                        return Some(breaker);
                    }
                }
            }
            // Being evicted: gone in a moment, or kept after all.
            std::thread::yield_now();
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
        for breaker in self.inner.map.load().pin().values() {
            breaker.reconfigure(config.clone());
        }
        // A lowered `max_keys` holds at once for the keys that hold nothing worth keeping; the
        // others go as they become evictable (new keys meanwhile get breakers not kept).
        if self.inner.held.load(Ordering::Acquire) > max_keys {
            self.evict_for_room(Instant::now());
        }
    }

    /// The most keys the family holds at once (`max_keys`, as in force now).
    pub fn max_keys(&self) -> usize {
        self.inner.config.load().max_keys
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        self.inner.map.load().len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key held, with its breaker.
    pub fn breakers(&self) -> Vec<(Arc<str>, Arc<Breaker>)> {
        self.inner
            .map
            .load()
            .pin()
            .iter()
            .filter_map(|(k, b)| Some((k.clone(), unless_evicted(b)?)))
            .collect()
    }

    fn insert(&self, key: &str) -> Arc<Breaker> {
        let inner = &*self.inner;
        let now = Instant::now();
        self.tick(now);
        let mut room_made = false;
        loop {
            let config = inner.config.load_full();
            let full = {
                let _inserting = inner.inserting.read().unwrap_or_else(|e| e.into_inner());
                let map = inner.map.load();
                let map = map.pin();
                match map.get(key).map(unless_evicted) {
                    Some(Some(breaker)) => return breaker,
                    // Being evicted: gone in a moment, or kept after all.
                    Some(None) => false,
                    None if reserve(&inner.held, config.max_keys) => {
                        match self.insert_reserved(&map, key, config) {
                            Some(breaker) => return breaker,
                            None => false,
                        }
                    }
                    None if room_made => return self.not_kept(key, config, now),
                    None => true,
                }
            };
            if full {
                room_made = true;
                self.make_room(now);
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Inserts a new breaker for `key` in a slot of `held` taken for it: the caller holds
    /// `inserting`.
    fn insert_reserved(
        &self,
        map: &papaya::HashMapRef<
            '_,
            Arc<str>,
            Arc<Breaker>,
            foldhash::fast::RandomState,
            impl papaya::Guard,
        >,
        key: &str,
        config: Arc<Config>,
    ) -> Option<Arc<Breaker>> {
        let inner = &*self.inner;
        let key: Arc<str> = Arc::from(key);
        let fresh = Arc::new(Breaker::of_family(
            config.clone(),
            Some(key.clone()),
            Some(&inner.family),
        ));
        fresh
            .seen
            .store(inner.generation.load(Ordering::Relaxed), Ordering::Relaxed);
        // `get_or_insert` rather than `get_or_insert_with`: papaya 0.2's `_with` form leaves long
        // probe chains behind under incremental resizing (lookups in the microseconds at 1M keys).
        let held = map.get_or_insert(key, fresh.clone());
        let breaker = if Arc::ptr_eq(held, &fresh) {
            inner.peak.fetch_max(map.len(), Ordering::Relaxed);
            fresh
        } else {
            // Another insert of this key won: its breaker is the key's (unless a sweep is
            // evicting it already: then look again).
            inner.held.fetch_sub(1, Ordering::Relaxed);
            unless_evicted(held)?
        };
        // The settings changed while this breaker was made: `reconfigure` may have passed it by.
        let now_in_force = inner.config.load_full();
        if !Arc::ptr_eq(&now_in_force, &config) {
            breaker.reconfigure(now_in_force);
        }
        Some(breaker)
    }

    /// A breaker for `key` that is not kept: the family is full and no key can be evicted.
    fn not_kept(&self, key: &str, config: Arc<Config>, now: Instant) -> Arc<Breaker> {
        let inner = &*self.inner;
        let not_kept = {
            let mut clock = inner.clock.lock().unwrap_or_else(|e| e.into_inner());
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
        Arc::new(Breaker::of_family(
            config,
            Some(Arc::from(key)),
            Some(&inner.family),
        ))
    }
}

/// Takes a slot of `held` if fewer than `max` are taken.
fn reserve(held: &AtomicUsize, max: usize) -> bool {
    held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < max).then_some(n + 1)
    })
    .is_ok()
}
impl fmt::Debug for KeyedBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBreaker")
            .field("name", &self.name())
            .field("keys", &self.len())
            .finish_non_exhaustive()
    }
}
