//! Keyed breakers: one breaker per distinct key (say, per host), created on first use and evicted
//! when idle, in a lock-free map.

use std::fmt::{self, Display, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::config::Config;
use super::engine::Breaker;

type Map = papaya::HashMap<Arc<str>, Arc<Breaker>, foldhash::fast::RandomState>;

/// A family of breakers with one configuration and one breaker per key.
///
/// Lookups are lock-free. A key whose breaker has been closed, without errors, and unused for
/// `idle_timeout` is evicted by a sweep that runs at most once per `idle_timeout` (on the blocking
/// pool when a tokio runtime is at hand), so per-host breakers cannot grow without bound. Open or
/// erroring breakers are never evicted: eviction never lifts protection.
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

struct Inner {
    config: Arc<Config>,
    map: Map,
    generation: AtomicU32,
    last_sweep: Mutex<Option<Instant>>,
    sweeping: AtomicBool,
}

impl KeyedBreaker {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        KeyedBreaker {
            inner: Arc::new(Inner {
                config,
                map: Map::with_hasher(foldhash::fast::RandomState::default()),
                generation: AtomicU32::new(0),
                last_sweep: Mutex::new(None),
                sweeping: AtomicBool::new(false),
            }),
        }
    }

    /// The breaker for `key`, created on first use. `key` is anything that implements `Display`;
    /// its text is the key.
    #[inline]
    pub fn breaker<K: Display + ?Sized>(&self, key: &K) -> Arc<Breaker> {
        let key = KeyText::of(key);
        let inner = &*self.inner;
        if let Some(breaker) = inner.map.pin().get(key.as_str()) {
            let generation = inner.generation.load(Ordering::Relaxed);
            if breaker.seen.load(Ordering::Relaxed) != generation {
                breaker.seen.store(generation, Ordering::Relaxed);
            }
            return breaker.clone();
        }
        self.insert(key.as_str())
    }

    /// The breaker for `key` if it exists, without creating one.
    pub fn get<K: Display + ?Sized>(&self, key: &K) -> Option<Arc<Breaker>> {
        let key = KeyText::of(key);
        self.inner.map.pin().get(key.as_str()).cloned()
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.config.name
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

    /// Evicts, now, every key unused since the previous sweep whose breaker is closed without
    /// recent errors. Returns how many keys were evicted.
    pub fn evict_idle(&self) -> usize {
        self.inner.sweep()
    }

    #[cold]
    fn insert(&self, key: &str) -> Arc<Breaker> {
        let inner = &self.inner;
        let now = Instant::now();
        let due = {
            let mut last = inner.last_sweep.lock().unwrap_or_else(|e| e.into_inner());
            match *last {
                None => {
                    *last = Some(now);
                    false
                }
                Some(at) if now.saturating_duration_since(at) >= inner.config.idle_timeout => {
                    *last = Some(now);
                    true
                }
                Some(_) => false,
            }
        };
        if due {
            self.sweep_in_background();
        }
        if inner.map.len() >= inner.config.max_keys && inner.sweep() == 0 {
            tracing::warn!(
                target: "resilient::breaker",
                breaker = &*inner.config.name,
                key,
                max_keys = inner.config.max_keys,
                "keyed breaker is full and no key is idle; this key's breaker is not kept"
            );
            return Arc::new(Breaker::new(inner.config.clone(), Some(Arc::from(key))));
        }
        let key: Arc<str> = Arc::from(key);
        let fresh = Breaker::new(inner.config.clone(), Some(key.clone()));
        fresh
            .seen
            .store(inner.generation.load(Ordering::Relaxed), Ordering::Relaxed);
        inner
            .map
            .pin()
            .get_or_insert_with(key, || Arc::new(fresh))
            .clone()
    }

    fn sweep_in_background(&self) {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            drop(handle.spawn_blocking(move || inner.sweep()));
        } else {
            self.inner.sweep();
        }
    }
}

impl Inner {
    fn sweep(&self) -> usize {
        if self.sweeping.swap(true, Ordering::Acquire) {
            return 0;
        }
        let generation = self.generation.load(Ordering::Relaxed);
        let before = self.map.len();
        self.map.pin().retain(|_, breaker| {
            breaker.seen.load(Ordering::Relaxed) == generation || !breaker.is_idle()
        });
        self.generation
            .store(generation.wrapping_add(1), Ordering::Relaxed);
        self.sweeping.store(false, Ordering::Release);
        let evicted = before.saturating_sub(self.map.len());
        if evicted > 0 {
            tracing::debug!(target: "resilient::breaker", breaker = &*self.config.name, evicted, "evicted idle keys");
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
