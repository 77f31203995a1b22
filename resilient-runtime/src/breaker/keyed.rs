//! Keyed breakers: one breaker per distinct key (say, per host), created on first use and evicted
//! when idle, in a lock-free map.

use std::fmt::{self, Display, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use super::config::Config;
use super::engine::Breaker;

type Map = papaya::HashMap<Arc<str>, Arc<Breaker>, foldhash::fast::RandomState>;

/// A family of breakers with one configuration and one breaker per key.
///
/// Lookups are lock-free. A key whose breaker is closed, without recent errors, and unused for
/// about `idle_timeout` is evicted by a sweep that runs as time passes (on the blocking pool when a
/// tokio runtime is at hand), and a full family (`max_keys`) makes room by evicting idle breakers,
/// so per-host breakers cannot grow without bound. Open or erroring breakers are never evicted:
/// eviction never lifts protection, and an evicted breaker held no state worth keeping. Nor is a
/// breaker that calls in flight (or any other holder of its `Arc`) still use: their outcomes
/// land on the breaker that the key's later calls get.
///
/// ```
/// use resilient_runtime::Breaker;
///
/// let hosts = Breaker::builder("per-host").error_threshold(1).build_keyed().unwrap();
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let a = hosts.breaker("a.example");
/// a.force_open();
/// assert!(hosts.breaker("b.example").state() == resilient_runtime::breaker::State::Closed);
/// assert_eq!(hosts.len(), 2);
/// # });
/// ```
pub struct KeyedBreaker {
    inner: Arc<Inner>,
}

/// What a family's breakers share besides their options.
pub(crate) struct Family {
    /// The family's series: one set for every key.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Arc<crate::metrics::breaker::BreakerMetrics>,
}

struct Inner {
    name: Arc<str>,
    family: Family,
    /// The options in force, which a new key's breaker starts with.
    config: ArcSwap<Config>,
    map: Map,
    /// Advances once per half `idle_timeout`; each breaker remembers the one it was last used in.
    generation: AtomicU32,
    clock: Mutex<Clock>,
    /// Held while sweeping: one sweep at a time.
    sweeping: Mutex<()>,
    /// A sweep is queued on the blocking pool: at most one waits at a time, however often the
    /// generation moves.
    queued: AtomicBool,
}

/// When the generation last advanced, and when a full family was last swept.
struct Clock {
    tick: Option<Instant>,
    full_sweep: Option<Instant>,
}

/// A breaker unused for this many generations (each half an `idle_timeout`) may be evicted.
const IDLE_GENERATIONS: u32 = 2;
/// Lookups (per thread) between two looks at the clock on the hit path.
const HITS_PER_TICK_CHECK: u32 = 256;

thread_local! {
    static HITS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl KeyedBreaker {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        KeyedBreaker {
            inner: Arc::new(Inner {
                name: config.name.clone(),
                family: Family {
                    #[cfg(feature = "metrics")]
                    metrics: crate::metrics::breaker::handles(&config.name),
                },
                config: ArcSwap::new(config),
                // Blocking resizes: an incremental resize left unfinished makes every lookup
                // search two tables.
                map: papaya::HashMap::builder()
                    .hasher(foldhash::fast::RandomState::default())
                    .resize_mode(papaya::ResizeMode::Blocking)
                    .build(),
                generation: AtomicU32::new(0),
                clock: Mutex::new(Clock {
                    tick: None,
                    full_sweep: None,
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
        if let Some(breaker) = inner.map.pin().get(key) {
            let generation = inner.generation.load(Ordering::Relaxed);
            if breaker.seen.load(Ordering::Relaxed) != generation {
                breaker.seen.store(generation, Ordering::Relaxed);
            }
            let hits = HITS.with(|h| {
                let n = h.get().wrapping_add(1);
                h.set(n);
                n
            });
            if hits % HITS_PER_TICK_CHECK == 0 {
                self.tick(Instant::now());
            }
            return breaker.clone();
        }
        self.insert(key)
    }

    /// The breaker for `key` if it exists, without creating one.
    pub fn get<K: BreakerKey + ?Sized>(&self, key: &K) -> Option<Arc<Breaker>> {
        key.with_text(|key| self.inner.map.pin().get(key).cloned())
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Puts `config` in force for the family: for the breakers it holds (each keeps its state;
    /// see [`Breaker::reconfigure`]) and the ones it creates from now on.
    pub(crate) fn reconfigure(&self, config: Arc<Config>) {
        self.inner.config.store(config.clone());
        for breaker in self.inner.map.pin().values() {
            breaker.reconfigure(config.clone());
        }
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        self.inner.map.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key held, with its breaker.
    pub fn breakers(&self) -> Vec<(Arc<str>, Arc<Breaker>)> {
        self.inner
            .map
            .pin()
            .iter()
            .map(|(k, b)| (k.clone(), b.clone()))
            .collect()
    }

    /// Evicts, now, every key unused since the sweep before the previous one whose breaker is
    /// closed without recent errors (so calling it twice evicts every key unused in between).
    /// Returns how many keys were evicted.
    pub fn evict_idle(&self) -> usize {
        self.inner.sweep(1, false, None)
    }

    /// Advances the generation by the half `idle_timeout`s elapsed since the last advance, and
    /// sweeps when it moved: on the blocking pool when a tokio runtime is at hand (one sweep
    /// queued at a time), here otherwise.
    fn tick(&self, now: Instant) {
        let period =
            (self.inner.config.load().idle_timeout / IDLE_GENERATIONS).max(Duration::from_nanos(1));
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
                drop(handle.spawn_blocking(move || queued.0.clone().sweep(0, false, Some(queued))));
            }
            Err(_) => {
                self.inner.sweep(0, false, None);
            }
        }
    }

    #[cold]
    fn insert(&self, key: &str) -> Arc<Breaker> {
        let inner = &self.inner;
        let now = Instant::now();
        self.tick(now);
        let config = inner.config.load_full();
        if inner.map.len() >= config.max_keys && !self.make_room(now) {
            tracing::warn!(
                target: "resilient::breaker",
                breaker = &*inner.name,
                key,
                max_keys = config.max_keys,
                "keyed breaker is full and no key is idle; this key's breaker is not kept"
            );
            return Arc::new(Breaker::of_family(
                config,
                Some(Arc::from(key)),
                Some(&inner.family),
            ));
        }
        let key: Arc<str> = Arc::from(key);
        let fresh = Breaker::of_family(config.clone(), Some(key.clone()), Some(&inner.family));
        fresh
            .seen
            .store(inner.generation.load(Ordering::Relaxed), Ordering::Relaxed);
        // `get_or_insert` rather than `get_or_insert_with`: papaya 0.2's `_with` form leaves long
        // probe chains behind under incremental resizing (lookups in the microseconds at 1M keys).
        let breaker = inner.map.pin().get_or_insert(key, Arc::new(fresh)).clone();
        // The settings changed while this breaker was made: `reconfigure` may have passed it by.
        let now_in_force = inner.config.load_full();
        if !Arc::ptr_eq(&now_in_force, &config) {
            breaker.reconfigure(now_in_force);
        }
        breaker
    }

    /// The family is full: evict every idle breaker (closed, no recent errors), however recently
    /// used; losing one loses no state worth keeping. At most once per half `idle_timeout`, so
    /// that a flood of new keys does not sweep on every call.
    fn make_room(&self, now: Instant) -> bool {
        let inner = &self.inner;
        let period = inner.config.load().idle_timeout / IDLE_GENERATIONS;
        let due = {
            let mut clock = inner.clock.lock().unwrap_or_else(|e| e.into_inner());
            match clock.full_sweep {
                Some(at) if now.saturating_duration_since(at) < period => false,
                _ => {
                    clock.full_sweep = Some(now);
                    true
                }
            }
        };
        if due {
            inner.sweep(0, true, None);
        }
        inner.map.len() < inner.config.load().max_keys
    }
}

/// A queued sweep: clears [`Inner::queued`] when dropped.
struct Queued(Arc<Inner>);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.queued.store(false, Ordering::Release);
    }
}

impl Inner {
    /// Moves the generation on by `advance` and evicts idle breakers unused for
    /// `IDLE_GENERATIONS` generations (or every idle breaker, when `all`).
    ///
    /// A breaker that anything outside the map still holds is never evicted: a call in flight
    /// holds its breaker, and its outcome must land on the breaker that the key's next calls use.
    fn sweep(&self, advance: u32, all: bool, queued: Option<Queued>) -> usize {
        let _one_at_a_time = self.sweeping.lock().unwrap_or_else(|e| e.into_inner());
        // From here on, a tick that moves the generation queues the next sweep.
        drop(queued);
        let generation = self
            .generation
            .fetch_add(advance, Ordering::Relaxed)
            .wrapping_add(advance);
        let before = self.map.len();
        self.map.pin().retain(|_, breaker| {
            let unused = generation.wrapping_sub(breaker.seen.load(Ordering::Relaxed));
            let evict = (all || unused >= IDLE_GENERATIONS)
                && Arc::strong_count(breaker) == 1
                && breaker.is_idle();
            #[cfg(feature = "metrics")]
            if evict {
                breaker.uncount();
            }
            !evict
        });
        let evicted = before.saturating_sub(self.map.len());
        if evicted > 0 {
            tracing::debug!(target: "resilient::breaker", breaker = &*self.name, evicted, "evicted idle keys");
        }
        evicted
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
/// use resilient_runtime::breaker::BreakerKey;
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
    note = "keys are strings, numbers, addresses, `char`, `bool` or `format_args!(..)`; use e.g. `key = x.to_string()` (for an `Option`, a key for `None` too: `key = x.unwrap_or(\"none\")`), or implement `resilient::breaker::BreakerKey`"
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
