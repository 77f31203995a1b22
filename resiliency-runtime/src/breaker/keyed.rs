//! Keyed breakers: one breaker per distinct key (say, per host), created on first use and evicted
//! when idle, in a lock-free map.

use std::fmt::{self, Display, Write as _};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use super::config::Config;
use super::engine::Breaker;

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
    pub(crate) meter: super::meter::Handles,
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
#[inline]
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
                    meter: super::meter::handles(&config.name),
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
    #[inline]
    pub fn breaker<K: BreakerKey + ?Sized>(&self, key: &K) -> Arc<Breaker> {
        key.with_text(|key| self.breaker_for(key))
    }

    #[inline]
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
        self.inner.config.store(config.clone());
        for breaker in self.inner.map.load().pin().values() {
            breaker.reconfigure(config.clone());
        }
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
    fn tick(&self, now: Instant) {
        let period = self.inner.period();
        let elapsed = {
            let Ok(mut clock) = self.inner.clock.try_lock() else {
                return;
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

    #[cold]
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
                breaker = &*inner.name,
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

    /// The family is full: evict the keys unused for longest among those that hold nothing
    /// worth keeping, however recently used. A look that finds none is not repeated until a
    /// key may have become evictable.
    fn make_room(&self, now: Instant) {
        let inner = &*self.inner;
        {
            let clock = inner.clock.lock().unwrap_or_else(|e| e.into_inner());
            if clock.next_room.is_some_and(|at| now < at) {
                return;
            }
        }
        let max_keys = inner.config.load().max_keys;
        let target = (max_keys / 32).max(1);
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
            let mut clock = inner.clock.lock().unwrap_or_else(|e| e.into_inner());
            clock.next_room = Some(now + recheck);
        }
    }
}

/// Takes a slot of `held` if fewer than `max` are taken.
fn reserve(held: &AtomicUsize, max: usize) -> bool {
    held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < max).then_some(n + 1)
    })
    .is_ok()
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
    /// A breaker that anything outside the map still holds is never evicted: a call in flight
    /// holds its breaker, and its outcome must land on the breaker that the key's next calls use.
    fn sweep(&self, advance: u32, mode: Sweep<'_>, queued: Option<Queued>) -> usize {
        let _one_at_a_time = self.sweeping.lock().unwrap_or_else(|e| e.into_inner());
        // From here on, a tick that moves the generation queues the next sweep.
        drop(queued);
        let generation = self
            .generation
            .fetch_add(advance, Ordering::Relaxed)
            .wrapping_add(advance);
        let age = |breaker: &Breaker| generation.wrapping_sub(breaker.seen.load(Ordering::Relaxed));
        let map = self.map.load_full();
        let map = map.pin();
        // The youngest age that goes, and how many of that age may go (older ones all go).
        let (min_age, mut of_min_age) = match mode {
            Sweep::Idle => (IDLE_GENERATIONS, usize::MAX),
            Sweep::Room { target, next } => {
                let mut ages = [0usize; AGES];
                for (_, breaker) in map.iter() {
                    match breaker.idle_in() {
                        Some(Duration::ZERO) if Arc::strong_count(breaker) == 1 => {
                            ages[(age(breaker) as usize).min(AGES - 1)] += 1;
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
        map.retain(|_, breaker| {
            // Marked by this sweep already: a resize made the map offer it again.
            if breaker.evicted.load(Ordering::Relaxed) {
                return false;
            }
            let a = age(breaker);
            let goes = a >= min_age
                && (a != min_age || of_min_age > 0)
                && Arc::strong_count(breaker) == 1
                && breaker.idle_in() == Some(Duration::ZERO);
            if !goes {
                return true;
            }
            breaker.evicted.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if Arc::strong_count(breaker) != 1 {
                // A lookup took it meanwhile: it stays.
                breaker.evicted.store(false, Ordering::Relaxed);
                return true;
            }
            if a == min_age {
                of_min_age -= 1;
            }
            breaker.uncount();
            evicted += 1;
            false
        });
        self.held.fetch_sub(evicted, Ordering::AcqRel);
        self.removed.fetch_add(evicted, Ordering::Relaxed);
        if evicted > 0 {
            tracing::debug!(target: "resiliency::breaker", breaker = &*self.name, evicted, "evicted idle keys");
            drop(map);
            self.shrink();
        }
        evicted
    }

    /// Replaces the map by a copy sized for what it holds, when eviction left it holding at
    /// most 1/`SHRINK_BELOW` of its peak (a map keeps the table of its peak otherwise), or when
    /// the keys removed since the last copy reach half its peak: a removed key leaves a
    /// tombstone in papaya's table, and a family that keeps evicting to make room for new keys
    /// would otherwise fill its table with them until every insert probes the whole table. The
    /// caller holds `sweeping`.
    fn shrink(&self) {
        let len = self.map.load().len();
        let peak = self.peak.load(Ordering::Relaxed);
        let small = peak >= SHRINK_FROM && len <= peak / SHRINK_BELOW;
        let tombstones = self.removed.load(Ordering::Relaxed) >= peak.max(SHRINK_FROM) / 2;
        if !small && !tombstones {
            return;
        }
        let _no_insert = self.inserting.write().unwrap_or_else(|e| e.into_inner());
        let old = self.map.load_full();
        let fresh = new_map();
        {
            let (old, pinned) = (old.pin(), fresh.pin());
            for (key, breaker) in old.iter() {
                if !breaker.evicted.load(Ordering::Relaxed) {
                    pinned.insert(key.clone(), breaker.clone());
                }
            }
        }
        self.peak.store(fresh.len(), Ordering::Relaxed);
        self.removed.store(0, Ordering::Relaxed);
        self.map.store(Arc::new(fresh));
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

/// A value that can key a breaker: its text names the breaker.
///
/// String types lend their text as it is (no copy, no formatting); numbers, addresses, `char`,
/// `bool` and `format_args!(..)` are formatted on the stack. For another type, key by a string
/// (`key = user.id.as_str()`, `key = x.to_string()`) or implement this trait with
/// [`BreakerKey::display`]:
///
/// ```
/// use std::fmt;
/// use resiliency::breaker::BreakerKey;
///
/// struct Region(u8);
/// impl fmt::Display for Region {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { write!(f, "region-{}", self.0) }
/// }
/// impl BreakerKey for Region {
///     fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
///         Self::display(self, f)
///     }
/// }
/// assert_eq!(Region(3).with_text(str::len), 8);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot key a breaker",
    label = "the key's text names its breaker",
    note = "keys are strings, numbers, addresses, `char`, `bool` or `format_args!(..)`; use e.g. `key = x.to_string()` (for an `Option`, a key for `None` too: `key = x.unwrap_or(\"none\")`), or implement `resiliency::breaker::BreakerKey`"
)]
pub trait BreakerKey {
    /// Calls `f` with the key's text.
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R;

    /// Formats `key` on the stack (spilling to the heap past 96 bytes) and calls `f` with it: the
    /// body of `with_text` for a `Display` type.
    fn display<R>(key: &(impl Display + ?Sized), f: impl FnOnce(&str) -> R) -> R
    where
        Self: Sized,
    {
        let text = KeyText::of(key);
        f(text.as_str())
    }
}

impl BreakerKey for str {
    #[inline]
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        f(self)
    }
}

impl<K: BreakerKey + ?Sized> BreakerKey for &K {
    #[inline]
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        (**self).with_text(f)
    }
}

impl<K: BreakerKey + ?Sized> BreakerKey for &mut K {
    #[inline]
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        (**self).with_text(f)
    }
}

macro_rules! string_keys {
    ($($ty:ty),*) => {$(
        impl BreakerKey for $ty {
            #[inline]
            fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
                f(self)
            }
        }
    )*};
}

string_keys!(
    String,
    Box<str>,
    Arc<str>,
    std::rc::Rc<str>,
    std::borrow::Cow<'_, str>
);

macro_rules! display_keys {
    ($($ty:ty),*) => {$(
        impl BreakerKey for $ty {
            #[inline]
            fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
                let text = KeyText::of(self);
                f(text.as_str())
            }
        }
    )*};
}

display_keys!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    char,
    bool,
    std::net::IpAddr,
    std::net::Ipv4Addr,
    std::net::Ipv6Addr,
    std::net::SocketAddr,
    std::net::SocketAddrV4,
    std::net::SocketAddrV6,
    fmt::Arguments<'_>
);

/// A key's text, formatted on the stack when it fits.
/// A key's text, formatted on the stack when it fits.
struct KeyText {
    buf: [u8; 96],
    len: usize,
    spill: Option<String>,
}

impl KeyText {
    #[inline]
    fn of<K: Display + ?Sized>(key: &K) -> Self {
        let mut text = KeyText {
            buf: [0; 96],
            len: 0,
            spill: None,
        };
        let _ = write!(text, "{key}");
        text
    }

    #[inline]
    fn as_str(&self) -> &str {
        match &self.spill {
            Some(s) => s,
            // Only whole `&str`s are ever copied in, so the bytes are UTF-8.
            None => std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default(),
        }
    }
}

impl fmt::Write for KeyText {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(spill) = &mut self.spill {
            spill.push_str(s);
        } else if self.len + s.len() <= self.buf.len() {
            self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
            self.len += s.len();
        } else {
            let mut spill = String::with_capacity(self.len + s.len());
            spill.push_str(self.as_str());
            spill.push_str(s);
            self.spill = Some(spill);
        }
        Ok(())
    }
}

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
