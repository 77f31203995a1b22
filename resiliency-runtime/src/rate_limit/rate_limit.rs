//! [`RateLimit`]: GCRA over one atomic word, its settings changeable at run time.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use resiliency_rules::Rate;
use tokio::time::Instant;

use super::builder::RateLimitBuilder;
use super::future::RateLimitCall;
use super::meter::MeterCell;
use crate::rejected::{FromRejected, Reason, Rejected};
use crate::stripes::Padded;

/// A rate limit: at most `rate` calls per period, paced evenly, with up to `burst` at once after a
/// quiet while (the generic cell rate algorithm, as governor and redis-cell implement it: one
/// atomic word, the time the next call is due, and no lock, task or timer). A call over the limit
/// is refused with the time until the next permit ([`Rejected::retry_after`]), or waits for its
/// permit up to `max_wait`.
///
/// Made by [`RateLimit::builder`], by `#[rate_limit]` (one per site name) or by a
/// [`RateLimitLayer`](crate::tower::RateLimitLayer). See the [module docs](super).
pub struct RateLimit {
    name: &'static str,
    /// GCRA's theoretical arrival time: when, in ns since `base`, the calls admitted so far would
    /// all have come at the rate's pace. A call is admitted while it is at most `tolerance_ns`
    /// ahead of now. Alone on its cache line: every call writes it.
    tat: Padded<AtomicU64>,
    /// The settings in force: the time between two calls at the rate's pace (ns, at least 1),
    /// how far ahead of now the calls admitted may run (`burst` intervals), the longest wait for
    /// a permit (0: none), and the rate as given (its count and period), for messages.
    interval_ns: AtomicU64,
    tolerance_ns: AtomicU64,
    max_wait_ns: AtomicU64,
    count: AtomicU64,
    per_ns: AtomicU64,
    /// The keys of keyed calls ([`RateLimit::call_keyed`]), each with an arrival time of its own:
    /// made at the first keyed call.
    keys: OnceLock<Keys>,
    max_keys: AtomicUsize,
    base: Instant,
    pub(super) metrics: MeterCell,
}

/// The arrival times of a keyed limit's keys, by the key's hash (seeded at random per limit, so
/// that keys taken from requests cannot be chosen to collide), in shards each behind a
/// reader-writer lock (a call takes its shard's read lock; a new key and a sweep take a write
/// lock), and the one the keys that do not fit share.
struct Keys {
    shards: Box<[Padded<RwLock<Shard>>]>,
    hasher: foldhash::fast::RandomState,
    /// One sweep at a time.
    sweeping: Mutex<()>,
    /// The keys filed, or about to be: at most `max_keys`.
    held: AtomicUsize,
    overflow: Padded<AtomicU64>,
}

/// One shard: the keys' arrival times by their hash (already mixed: not hashed again).
type Shard = HashMap<u64, AtomicU64, BuildHasherDefault<Mixed>>;

/// The hasher of a key's hash: the hash itself.
#[derive(Default)]
struct Mixed(u64);

impl Hasher for Mixed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed here (`write_u64`); anything else is folded in, for safety.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl Keys {
    /// A place for a new key, if fewer than `max` are held.
    fn reserve(&self, max: usize) -> bool {
        self.held
            .fetch_update(Relaxed, Relaxed, |held| (held < max).then_some(held + 1))
            .is_ok()
    }

    /// The shard of the key hashed `key` (its top bits: the map's own buckets use the low ones).
    fn shard(&self, key: u64) -> &RwLock<Shard> {
        &self.shards[(key >> 48) as usize % self.shards.len()].0
    }
}

/// What admission decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Admitted now.
    Now,
    /// A permit reserved `wait_ns` from now: the call runs then. `tat` is the arrival time it
    /// set, which a call dropped while it waits gives back if no later call took one since.
    Wait { wait_ns: u64, tat: u64 },
    /// Refused: the next permit frees in `retry_ns`.
    Refused { retry_ns: u64 },
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("name", &self.name)
            .field("rate", &self.rate().to_string())
            .field("burst", &self.burst())
            .field("max_wait", &self.max_wait())
            .finish()
    }
}

impl RateLimit {
    /// A builder for a rate limit called `name` (the name its events, metrics and refusals
    /// carry).
    ///
    /// ```
    /// use resiliency::rate_limit::{Rate, RateLimit};
    ///
    /// let limit = RateLimit::builder("api").rate(Rate::per_second(100)).burst(20).build().unwrap();
    /// assert_eq!(limit.rate().to_string(), "100/s");
    /// assert_eq!(limit.burst(), 20);
    /// // `rate` is required.
    /// let err = RateLimit::builder("api").build().unwrap_err();
    /// assert!(err.to_string().contains("`rate` is required"));
    /// ```
    pub fn builder(name: &'static str) -> RateLimitBuilder {
        RateLimitBuilder::new(name)
    }

    /// A rate limit with no rate yet (`apply` gives it one): every call admitted.
    pub(crate) fn new(name: &'static str) -> Self {
        RateLimit {
            name,
            tat: Padded(AtomicU64::new(0)),
            interval_ns: AtomicU64::new(1),
            tolerance_ns: AtomicU64::new(u64::MAX),
            max_wait_ns: AtomicU64::new(0),
            count: AtomicU64::new(u64::from(u32::MAX)),
            per_ns: AtomicU64::new(1),
            keys: OnceLock::new(),
            max_keys: AtomicUsize::new(usize::MAX),
            base: Instant::now(),
            metrics: MeterCell::new(),
        }
    }

    /// Puts checked options in force. The calls admitted so far keep counting against the new
    /// rate (the arrival time stays), so a change neither frees a new burst nor refuses calls that
    /// the old rate let in.
    pub(crate) fn apply(&self, builder: &RateLimitBuilder) {
        let options = &builder.options;
        let rate = options
            .rate
            .unwrap_or(Rate::new(u32::MAX, Duration::from_nanos(1)));
        // Capped, so that the arrival time never saturates within the life of a process.
        let interval = rate.interval_ns().min(LONGEST);
        let burst = u64::from(options.burst.unwrap_or(rate.count).max(1));
        self.count.store(u64::from(rate.count), Relaxed);
        self.per_ns.store(nanos(rate.per), Relaxed);
        self.interval_ns.store(interval, Relaxed);
        self.tolerance_ns
            .store(interval.saturating_mul(burst).min(LONGEST), Relaxed);
        self.max_wait_ns
            .store(options.max_wait.map_or(0, nanos), Relaxed);
        self.max_keys
            .store(builder.options.max_keys().max(1), Relaxed);
    }

    /// The rate limit's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The rate in force.
    pub fn rate(&self) -> Rate {
        Rate::new(
            u32::try_from(self.count.load(Relaxed)).unwrap_or(u32::MAX),
            Duration::from_nanos(self.per_ns.load(Relaxed)),
        )
    }

    /// The burst in force: how many calls may come at once after a quiet while.
    pub fn burst(&self) -> u64 {
        self.tolerance_ns.load(Relaxed) / self.interval_ns.load(Relaxed).max(1)
    }

    /// How long a call may wait for its permit (`None`: it is refused at once).
    pub fn max_wait(&self) -> Option<Duration> {
        match self.max_wait_ns.load(Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// How many calls would be admitted at once now, with no wait: from 0 to the burst.
    pub fn available(&self) -> u64 {
        let now = self.now();
        let interval = self.interval_ns.load(Relaxed).max(1);
        let tolerance = self.tolerance_ns.load(Relaxed);
        let ahead = self.tat.0.load(Relaxed).saturating_sub(now);
        tolerance.saturating_sub(ahead) / interval
    }

    /// Now, in ns since `base`.
    #[inline]
    pub(super) fn now(&self) -> u64 {
        nanos(Instant::now().saturating_duration_since(self.base))
    }

    /// Asks for a permit now, for the key hashed `key` (`None`: an unkeyed call): admitted, a
    /// permit reserved after a wait of at most `max_wait` (when `may_wait`), or refused. One
    /// compare-and-swap on the arrival time when admitted.
    #[inline]
    pub(crate) fn admit(&self, key: Option<u64>, may_wait: bool) -> Admit {
        match key {
            None => self.admit_on(&self.tat.0, may_wait),
            Some(key) => self.admit_key(key, may_wait),
        }
    }

    /// [`admit`](Self::admit) on one arrival time.
    #[inline]
    fn admit_on(&self, tat_cell: &AtomicU64, may_wait: bool) -> Admit {
        let now = self.now();
        let interval = self.interval_ns.load(Relaxed);
        let tolerance = self.tolerance_ns.load(Relaxed);
        let mut tat = tat_cell.load(Relaxed);
        loop {
            let next = tat.max(now).saturating_add(interval);
            // How far past the tolerance the calls admitted would run with this one.
            let over = (next - now).saturating_sub(tolerance);
            let admit = if over == 0 {
                Admit::Now
            } else if may_wait && over <= self.max_wait_ns.load(Relaxed) {
                Admit::Wait {
                    wait_ns: over,
                    tat: next,
                }
            } else {
                return Admit::Refused { retry_ns: over };
            };
            match tat_cell.compare_exchange_weak(tat, next, Relaxed, Relaxed) {
                Ok(_) => return admit,
                Err(current) => tat = current,
            }
        }
    }

    /// The hash of a key, as this limit's keyed calls file it.
    pub(crate) fn hash_key<K: std::hash::Hash + ?Sized>(&self, key: &K) -> u64 {
        std::hash::BuildHasher::hash_one(&self.keys().hasher, key)
    }

    fn keys(&self) -> &Keys {
        self.keys.get_or_init(|| Keys {
            shards: crate::stripes::stripes(),
            hasher: foldhash::fast::RandomState::default(),
            sweeping: Mutex::new(()),
            held: AtomicUsize::new(0),
            overflow: Padded(AtomicU64::new(0)),
        })
    }

    /// [`admit`](Self::admit) for a key: its own arrival time (under its shard's read lock), made
    /// at its first call (after a sweep of the keys at rest, when `max_keys` are held), or the
    /// overflow's when every key held is busy.
    #[inline(never)]
    fn admit_key(&self, key: u64, may_wait: bool) -> Admit {
        let keys = self.keys();
        let shard = keys.shard(key);
        if let Some(cell) = read(shard).get(&key) {
            return self.admit_on(cell, may_wait);
        }
        let max = self.max_keys.load(Relaxed);
        if !keys.reserve(max) {
            self.sweep(keys);
            if !keys.reserve(max) {
                return self.admit_on(&keys.overflow.0, may_wait);
            }
        }
        let mut map = write(shard);
        let cell = match map.entry(key) {
            std::collections::hash_map::Entry::Occupied(cell) => {
                // Filed by another call meanwhile: its place is not taken twice.
                keys.held.fetch_sub(1, Relaxed);
                cell.into_mut()
            }
            std::collections::hash_map::Entry::Vacant(place) => place.insert(AtomicU64::new(0)),
        };
        self.admit_on(cell, may_wait)
    }

    /// Takes the keys at rest (their arrival time passed: as good as new, so nothing is lost)
    /// out of their shards, one sweep at a time, one shard's write lock at a time.
    #[cold]
    fn sweep(&self, keys: &Keys) {
        let Ok(_sweeping) = keys.sweeping.try_lock() else {
            return;
        };
        let now = self.now();
        for shard in keys.shards.iter() {
            let mut map = write(&shard.0);
            let before = map.len();
            map.retain(|_, tat| tat.load(Relaxed) > now);
            keys.held.fetch_sub(before - map.len(), Relaxed);
        }
    }

    /// The keys in the shards, counted one by one.
    #[cfg(test)]
    fn filed(&self) -> usize {
        self.keys.get().map_or(0, |keys| {
            keys.shards.iter().map(|shard| read(&shard.0).len()).sum()
        })
    }

    /// How many keys are held now (at most `max_keys`).
    pub fn keys_held(&self) -> usize {
        self.keys.get().map_or(0, |keys| keys.held.load(Relaxed))
    }

    /// A call that reserved a permit setting the arrival time to `tat` (of its key, if any) will
    /// not use it: given back if no later call took one since.
    pub(crate) fn give_back(&self, key: Option<u64>, tat: u64) {
        let interval = self.interval_ns.load(Relaxed);
        let back = |cell: &AtomicU64| {
            let _ = cell.compare_exchange(tat, tat.saturating_sub(interval), Relaxed, Relaxed);
        };
        match (key, self.keys.get()) {
            (None, _) => back(&self.tat.0),
            (Some(key), Some(keys)) => match read(keys.shard(key)).get(&key) {
                Some(cell) => back(cell),
                None => back(&keys.overflow.0),
            },
            (Some(_), None) => {}
        }
    }

    /// The refusal of a call whose permit frees in `retry_ns`, counted and told to `tracing`.
    #[cold]
    #[inline(never)]
    pub(crate) fn refusal(&self, retry_ns: u64) -> Rejected {
        self.meter().refused();
        let retry_after = Duration::from_nanos(retry_ns);
        let rate = self.rate();
        tracing::debug!(
            target: "resiliency::rate_limit",
            name = self.name,
            rate = %rate,
            retry_after_ms = retry_after.as_millis() as u64,
            "call refused"
        );
        Rejected::new(Reason::RateLimited {
            name: self.name,
            rate,
            retry_after,
        })
    }

    /// Calls `body` under the rate limit: admitted at its first poll if a permit is free, after a
    /// wait for its permit (up to `max_wait`, first come first served), or refused with
    /// `Err(E::from(Rejected))`, whose [`retry_after`](Rejected::retry_after) says when the next
    /// permit frees.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resiliency::rate_limit::{Rate, RateLimit};
    /// use resiliency::Rejected;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let limit = RateLimit::builder("search").rate(Rate::per_second(10)).burst(2).build().unwrap();
    /// let call = || limit.call(async { Ok::<_, Rejected>(()) });
    /// assert!(call().await.is_ok());
    /// assert!(call().await.is_ok()); // the burst
    /// let refused = call().await.unwrap_err();
    /// assert!(refused.is_rate_limited());
    /// assert_eq!(refused.retry_after(), Some(Duration::from_millis(100)));
    /// # }
    /// ```
    #[inline]
    pub fn call<T, E, F>(&self, body: F) -> RateLimitCall<'_, F, E>
    where
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        RateLimitCall::new(self, None, body)
    }

    /// [`call`](Self::call) for `key`: each key has a limit of its own, with this limit's settings
    /// (say, per client: `key = client_ip`). Any `Hash` value is a key; keys are filed by a hash
    /// seeded at random for each limit. At most `max_keys` keys are held: a key at rest (its
    /// permits all free again: as good as new) is dropped first, and when every key held is busy, a
    /// new key shares one limit with the others that do not fit.
    ///
    /// ```
    /// use resiliency::rate_limit::{Rate, RateLimit};
    /// use resiliency::Rejected;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let per_client = RateLimit::builder("per-client").rate(Rate::per_second(1)).build().unwrap();
    /// let call = |client: &str| per_client.call_keyed(client, async { Ok::<_, Rejected>(()) });
    /// assert!(call("10.0.0.1").await.is_ok());
    /// assert!(call("10.0.0.1").await.unwrap_err().is_rate_limited());
    /// assert!(call("10.0.0.2").await.is_ok()); // another client, a limit of its own
    /// # }
    /// ```
    #[inline]
    pub fn call_keyed<K, T, E, F>(&self, key: &K, body: F) -> RateLimitCall<'_, F, E>
    where
        K: std::hash::Hash + ?Sized,
        F: Future<Output = Result<T, E>>,
        E: FromRejected,
    {
        RateLimitCall::new(self, Some(self.hash_key(key)), body)
    }

    /// Calls a blocking `body` under the rate limit, on the caller's thread: at once if a permit
    /// is free, after sleeping the thread for its permit (up to `max_wait`), or not at all, with
    /// `Err(E::from(Rejected))`.
    pub fn call_blocking<T, E, F>(&self, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
    {
        self.blocking(None, body)
    }

    /// [`call_blocking`](Self::call_blocking) for `key` (see [`call_keyed`](Self::call_keyed)).
    pub fn call_blocking_keyed<K, T, E, F>(&self, key: &K, body: F) -> Result<T, E>
    where
        K: std::hash::Hash + ?Sized,
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
    {
        self.blocking(Some(self.hash_key(key)), body)
    }

    pub(crate) fn blocking<T, E, F>(&self, key: Option<u64>, body: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E>,
        E: FromRejected,
    {
        match self.admit(key, true) {
            Admit::Now => self.meter().admitted(),
            Admit::Wait { wait_ns, .. } => {
                self.meter().waited();
                std::thread::sleep(Duration::from_nanos(wait_ns));
            }
            Admit::Refused { retry_ns } => return Err(E::from(self.refusal(retry_ns))),
        }
        body()
    }
}

/// A shard's read lock (a panic elsewhere while it was held leaves it usable: every update of a
/// shard is whole).
fn read(shard: &RwLock<Shard>) -> RwLockReadGuard<'_, Shard> {
    shard.read().unwrap_or_else(|e| e.into_inner())
}

/// A shard's write lock, likewise.
fn write(shard: &RwLock<Shard>) -> RwLockWriteGuard<'_, Shard> {
    shard.write().unwrap_or_else(|e| e.into_inner())
}

/// The longest interval and tolerance, in ns (about 146 years): the arrival time, a sum of a
/// time since the limit's start and at most two of these, never reaches `u64::MAX`.
const LONGEST: u64 = 1 << 62;

/// `ns` from now, or as far as an `Instant` goes.
pub(super) fn later(ns: u64) -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_nanos(ns))
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now)
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limit(count: u32, per_ms: u64, burst: u32) -> RateLimit {
        RateLimit::builder("rate_limit::tests")
            .rate(Rate::new(count, Duration::from_millis(per_ms)))
            .burst(burst)
            .build()
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_settings_read_back_as_given() {
        let limit = RateLimit::builder("rate_limit::read_back")
            .rate(Rate::new(10, Duration::from_millis(500)))
            .burst(4)
            .max_wait(Duration::from_millis(30))
            .build()
            .unwrap();
        assert_eq!(limit.name(), "rate_limit::read_back");
        assert_eq!(limit.rate(), Rate::new(10, Duration::from_millis(500)));
        assert_eq!(limit.burst(), 4);
        assert_eq!(limit.max_wait(), Some(Duration::from_millis(30)));
        assert_eq!(limit.available(), 4);
        assert_eq!(limit.admit(None, false), Admit::Now);
        assert_eq!(limit.available(), 3);
        assert!(format!("{limit:?}").contains("rate: \"10/500ms\", burst: 4"));
        let unwaiting = RateLimit::builder("rate_limit::no_wait")
            .rate(Rate::per_second(1))
            .build()
            .unwrap();
        assert_eq!(unwaiting.max_wait(), None);
        assert_eq!(unwaiting.burst(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_within_max_wait_is_reserved_and_one_past_it_refused_and_given_back() {
        // 20 per second (50 ms apart), burst 1, waits of at most 120 ms.
        let limit = RateLimit::builder("rate_limit::waits")
            .rate(Rate::per_second(20))
            .burst(1)
            .max_wait(Duration::from_millis(120))
            .build()
            .unwrap();
        let ms = |n: u64| n * 1_000_000;
        assert_eq!(limit.admit(None, true), Admit::Now);
        let Admit::Wait {
            wait_ns,
            tat: first,
        } = limit.admit(None, true)
        else {
            panic!("a wait of 50 ms is within max_wait");
        };
        assert_eq!(wait_ns, ms(50));
        let Admit::Wait {
            wait_ns,
            tat: second,
        } = limit.admit(None, true)
        else {
            panic!("a wait of 100 ms is within max_wait");
        };
        assert_eq!(wait_ns, ms(100));
        // 150 ms is past `max_wait`: refused, with the time until its permit.
        assert_eq!(
            limit.admit(None, true),
            Admit::Refused { retry_ns: ms(150) }
        );
        // Without waiting, the same call is refused too.
        assert_eq!(
            limit.admit(None, false),
            Admit::Refused { retry_ns: ms(150) }
        );
        // A reservation given back out of turn (a later one was taken since) is not taken back.
        limit.give_back(None, first);
        assert_eq!(
            limit.admit(None, false),
            Admit::Refused { retry_ns: ms(150) }
        );
        // The last one is: the next call's wait is 100 ms again.
        limit.give_back(None, second);
        assert!(
            matches!(limit.admit(None, true), Admit::Wait { wait_ns, .. } if wait_ns == ms(100))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_keys_reservation_is_given_back_to_its_own_key() {
        let limit = RateLimit::builder("rate_limit::keyed_waits")
            .rate(Rate::per_second(10))
            .burst(1)
            .max_wait(Duration::from_secs(1))
            .build()
            .unwrap();
        let (a, b) = (limit.hash_key(&1u32), limit.hash_key(&2u32));
        assert_eq!(limit.admit(Some(a), true), Admit::Now);
        let Admit::Wait { tat, .. } = limit.admit(Some(a), true) else {
            panic!("a wait");
        };
        assert_eq!(limit.admit(Some(b), true), Admit::Now);
        limit.give_back(Some(a), tat);
        assert!(
            matches!(limit.admit(Some(a), true), Admit::Wait { wait_ns, .. } if wait_ns == 100_000_000)
        );
        assert_eq!(limit.keys_held(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_at_rest_is_swept_and_comes_back_as_new() {
        let limit = RateLimit::builder("rate_limit::swept")
            .rate(Rate::per_second(1))
            .burst(1)
            .max_keys(1)
            .build()
            .unwrap();
        let (a, b) = (limit.hash_key("a"), limit.hash_key("b"));
        assert_eq!(limit.admit(Some(a), false), Admit::Now);
        // `a` is busy: `b` goes to the shared limit, which it takes.
        assert_eq!(limit.admit(Some(b), false), Admit::Now);
        assert!(matches!(limit.admit(Some(b), false), Admit::Refused { .. }));
        assert_eq!(limit.keys_held(), 1);
        assert_eq!(limit.filed(), 1, "never more keys filed than max_keys");
        tokio::time::advance(Duration::from_millis(999)).await;
        // `a` is still busy (its permit frees in 1 ms): not swept; `b` shares the overflow.
        assert!(matches!(limit.admit(Some(b), false), Admit::Refused { .. }));
        tokio::time::advance(Duration::from_millis(1)).await;
        // `a` is at rest: swept to make room for `b`, whose limit is its own now.
        assert_eq!(limit.admit(Some(b), false), Admit::Now);
        assert_eq!(limit.keys_held(), 1);
        assert_eq!(limit.filed(), 1, "never more keys filed than max_keys");
        assert!(matches!(limit.admit(Some(b), false), Admit::Refused { .. }));
        // `b` left the shared limit: a third key, with no place, finds it free.
        let c = limit.hash_key("c");
        assert_eq!(limit.admit(Some(c), false), Admit::Now);
        assert_eq!((limit.filed(), limit.keys_held()), (1, 1));
    }

    #[test]
    fn threads_on_many_keys_with_sweeps_never_exceed_a_keys_bound() {
        // 4 threads on 64 keys with room for 8: sweeps run all along. Per key, at most
        // `span / interval + burst` calls are admitted, over the whole run.
        let limit: &'static RateLimit = Box::leak(Box::new(
            RateLimit::builder("rate_limit::sweeps")
                .rate(Rate::new(1, Duration::from_millis(20)))
                .burst(2)
                .max_keys(8)
                .build()
                .unwrap(),
        ));
        let admitted: &'static [AtomicU64] =
            Box::leak((0..64).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>());
        let started = std::time::Instant::now();
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut i = t;
                    while started.elapsed() < Duration::from_millis(200) {
                        i = (i * 7 + 3) % 64;
                        if limit.admit(Some(limit.hash_key(&i)), false) == Admit::Now {
                            admitted[i as usize].fetch_add(1, Relaxed);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let span = started.elapsed();
        // A key may also be served by the shared limit while it does not fit: both bounds add.
        let most = 2 * (span.as_millis() as u64 / 20 + 2) + 2;
        for (key, n) in admitted.iter().enumerate() {
            let n = n.load(Relaxed);
            assert!(
                n <= most,
                "key {key}: {n} admitted in {span:?}, at most {most}"
            );
        }
        assert!(limit.keys_held() <= 8);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Whatever the pattern of calls: within any span of time, at most `span / interval +
        /// burst` are admitted; and a call refused with `retry_after = r`, made again `r` later
        /// with no call in between, is admitted.
        #[test]
        fn the_bound_holds_and_a_refusal_tells_the_truth(
            count in 1u32..50,
            per_ms in 1u64..200,
            burst in 1u32..8,
            steps in prop::collection::vec((0u64..30, 0u8..5), 1..120),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            runtime.block_on(async {
                let limit = limit(count, per_ms, burst);
                let interval = limit.interval_ns.load(Relaxed);
                let mut admitted: Vec<u64> = Vec::new();
                for (advance_ms, calls) in steps {
                    tokio::time::advance(Duration::from_millis(advance_ms)).await;
                    for _ in 0..calls {
                        match limit.admit(None, false) {
                            Admit::Now => admitted.push(limit.now()),
                            Admit::Refused { retry_ns } => {
                                prop_assert!(retry_ns > 0 && retry_ns <= interval);
                                // Made again `retry_ns` later, nothing in between: admitted.
                                tokio::time::advance(Duration::from_nanos(retry_ns)).await;
                                prop_assert_eq!(limit.admit(None, false), Admit::Now);
                                admitted.push(limit.now());
                            }
                            Admit::Wait { .. } => prop_assert!(false, "no wait without max_wait"),
                        }
                    }
                }
                for (i, from) in admitted.iter().enumerate() {
                    for (j, to) in admitted.iter().enumerate().skip(i) {
                        let most = (to - from) / interval + u64::from(burst);
                        prop_assert!((j - i + 1) as u64 <= most, "{} admitted within {} ns", j - i + 1, to - from);
                    }
                }
                Ok(())
            })?;
        }
    }
}
