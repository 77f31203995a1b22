//! The table of a keyed family: open addressing with linear probing over slots that are written
//! once, each holding a key's entry: its hash, when it was last used, whether it was evicted,
//! and its breaker.
//!
//! A lookup of a key held reads its slot's line (the hash tells a slot of another key apart
//! without reading that key; the eviction bookkeeping is a relaxed store there, once per
//! generation) and then its breaker, whose first line holds the key (in place when short) and
//! the reference count: two dependent cache misses at a million keys, where a map of separately
//! allocated entries and keys takes five.
//!
//! Slots are written under the family's writer lock and never cleared: an evicted key's slot
//! keeps its breaker, marked evicted, as a tombstone that lookups pass over, until the table is
//! replaced by a fresh copy ([`Table::copy`]). Readers take no lock: the table lives while a
//! reader holds it (`ArcSwap`), and a set slot's hash and breaker never change.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use crate::breaker::breaker::Breaker;

/// A key held by the table (or its tombstone).
pub(super) struct Entry {
    /// The low half of the key's hash (the high bits place the slot).
    tag: u32,
    /// The generation in which the key was last used (the low 31 bits), and [`EVICTED`].
    state: AtomicU32,
    pub(super) breaker: Arc<Breaker>,
}

/// The mark of an evicted entry (set for good), or of one being evicted (set by a sweep that
/// takes it off again if a lookup holds the breaker). Only sweeps set it, under the writer lock.
const EVICTED: u32 = 1 << 31;
/// The bits of a generation that an entry keeps.
pub(super) const GENERATION: u32 = EVICTED - 1;

impl Entry {
    pub(super) fn is_evicted(&self) -> bool {
        self.state.load(Ordering::Relaxed) & EVICTED != 0
    }

    /// Generations since the key was last used, as of `generation`.
    pub(super) fn age(&self, generation: u32) -> u32 {
        generation.wrapping_sub(self.state.load(Ordering::Relaxed)) & GENERATION
    }

    /// The key was used in `generation`. Called by a lookup that holds the breaker and saw no
    /// mark after taking it: a sweep may mark the entry meanwhile, but it then sees the lookup's
    /// hold and takes its mark off again, so a plain store (which may overwrite that mark a moment
    /// early) loses nothing.
    #[inline]
    pub(super) fn used_in(&self, generation: u32) {
        let generation = generation & GENERATION;
        if self.state.load(Ordering::Relaxed) != generation {
            self.state.store(generation, Ordering::Relaxed);
        }
    }

    /// Marks the entry evicted: a sweep, under the writer lock.
    pub(super) fn mark(&self) {
        self.state.fetch_or(EVICTED, Ordering::Relaxed);
    }

    /// Takes a sweep's mark off: a lookup holds the breaker.
    pub(super) fn unmark(&self) {
        self.state.fetch_and(!EVICTED, Ordering::Relaxed);
    }
}

pub(super) struct Table {
    slots: Box<[OnceLock<Entry>]>,
}

/// A table holds at most this share of its slots set (live keys and tombstones): linear probing
/// stays short below it.
pub(super) const MAX_LOAD_NUM: usize = 3;
pub(super) const MAX_LOAD_DEN: usize = 4;
/// The fewest slots a table has.
const MIN_SLOTS: usize = 64;

impl Table {
    pub(super) fn with_slots(slots: usize) -> Table {
        Table {
            slots: (0..slots.max(MIN_SLOTS)).map(|_| OnceLock::new()).collect(),
        }
    }

    /// A table for `live` keys of a family of at most `max_keys`: room for as many again (so
    /// that it is copied O(log n) times as a family grows), but never more than `max_keys`
    /// needs, with a quarter of that to spare for tombstones.
    pub(super) fn for_keys(live: usize, max_keys: usize) -> Table {
        let room = live
            .saturating_mul(2)
            .min(max_keys.saturating_add(max_keys / 4))
            .max(live + 1);
        Table::with_slots(room.saturating_mul(MAX_LOAD_DEN) / MAX_LOAD_NUM + 1)
    }

    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Whether `set` set slots leave room for one more.
    pub(super) fn has_room(&self, set: usize) -> bool {
        (set + 1).saturating_mul(MAX_LOAD_DEN) <= self.slots().saturating_mul(MAX_LOAD_NUM)
    }

    /// The entries on `hash`'s probe sequence, up to the first unset slot.
    #[inline]
    pub(super) fn probe(&self, hash: u64) -> impl Iterator<Item = &Entry> {
        let len = self.slots.len();
        // The high bits of the hash, scaled to the table (no power of two needed).
        let start = ((u128::from(hash) * len as u128) >> 64) as usize;
        let (tail, head) = self.slots.split_at(start);
        head.iter().chain(tail).map_while(OnceLock::get)
    }

    /// The entry of `key` (whose hash is `hash`) that the table holds, unless evicted or being
    /// evicted; `marked` is set when an entry of `key` was passed over for an eviction mark (a
    /// tombstone, or one that a sweep may yet keep).
    #[inline]
    pub(super) fn find(&self, hash: u64, key: &[u8], marked: &mut bool) -> Option<&Entry> {
        let tag = hash as u32;
        for entry in self.probe(hash) {
            if entry.tag == tag
                && entry
                    .breaker
                    .key
                    .as_ref()
                    .is_some_and(|k| k.as_bytes() == key)
            {
                if !entry.is_evicted() {
                    return Some(entry);
                }
                *marked = true;
            }
        }
        None
    }

    /// Puts `breaker` in the first unset slot of `hash`'s probe sequence, as used in
    /// `generation`. The caller holds the writer lock, and checked [`has_room`](Self::has_room).
    pub(super) fn place(&self, hash: u64, breaker: Arc<Breaker>, generation: u32) {
        let len = self.slots.len();
        let start = ((u128::from(hash) * len as u128) >> 64) as usize;
        let (tail, head) = self.slots.split_at(start);
        let mut entry = Some(Entry {
            tag: hash as u32,
            state: AtomicU32::new(generation & GENERATION),
            breaker,
        });
        for slot in head.iter().chain(tail) {
            match slot.set(entry.take().expect("placed once")) {
                Ok(()) => return,
                Err(back) => entry = Some(back),
            }
        }
        unreachable!("a table is never full");
    }

    /// Every set slot's entry, tombstones included.
    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().filter_map(OnceLock::get)
    }

    /// The entries of the slots in `range` (clamped to the table).
    pub(super) fn entries_in(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = &Entry> {
        let end = range.end.min(self.slots.len());
        let start = range.start.min(end);
        self.slots[start..end].iter().filter_map(OnceLock::get)
    }

    /// A copy holding the entries not evicted, in a table sized for them (`Table::for_keys`),
    /// their keys hashed again with `hasher` (an entry keeps half its hash). The caller holds the
    /// writer lock, so that no mark changes meanwhile. A lookup still reading this table may
    /// record a use here after the copy: the key then looks a little older to sweeps than it is.
    pub(super) fn copy(&self, live: usize, max_keys: usize, hasher: &impl BuildHasher) -> Table {
        let fresh = Table::for_keys(live, max_keys);
        for entry in self.entries() {
            if !entry.is_evicted() {
                let key = entry.breaker.key.as_ref().map_or(&[][..], |k| k.as_bytes());
                let state = entry.state.load(Ordering::Relaxed);
                fresh.place(hasher.hash_one(key), entry.breaker.clone(), state);
            }
        }
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::Key;
    use crate::Breaker as B;

    fn breaker(key: &str) -> Arc<Breaker> {
        let config = B::builder("keyed.table").validate().unwrap();
        Arc::new(Breaker::new(Arc::new(config), Some(Key::new(key))))
    }

    #[test]
    fn a_slot_is_three_words() {
        assert_eq!(std::mem::size_of::<OnceLock<Entry>>(), 24);
    }

    #[test]
    fn colliding_keys_tombstones_and_copies() {
        let hasher = foldhash::fast::RandomState::default();
        let table = Table::for_keys(0, 100);
        // One hash for every key: each probe walks the whole cluster and compares keys.
        let hash = 42;
        let keys = ["a", "b", "", "a-key-longer-than-twenty-two-bytes"];
        for (n, key) in keys.iter().enumerate() {
            assert!(table.has_room(n));
            table.place(hash, breaker(key), 7);
        }
        for key in keys {
            let entry = table.find(hash, key.as_bytes(), &mut false).unwrap();
            assert_eq!(entry.breaker.key(), Some(key));
            assert_eq!(entry.age(9), 2);
        }
        assert!(table.find(hash, b"c", &mut false).is_none());

        let b = table.find(hash, b"b", &mut false).unwrap();
        b.mark();
        let mut marked = false;
        assert!(table.find(hash, b"b", &mut marked).is_none());
        assert!(marked);
        // A key placed again after its tombstone is found past it.
        table.place(hash, breaker("b"), 8);
        let again = table.find(hash, b"b", &mut false).unwrap();
        assert!(!Arc::ptr_eq(&again.breaker, &b.breaker));

        let copy = table.copy(4, 100, &hasher);
        assert_eq!(copy.entries().count(), 4);
        for key in keys {
            let hash = hasher.hash_one(key.as_bytes());
            let entry = copy.find(hash, key.as_bytes(), &mut false).unwrap();
            let before = table.find(42, key.as_bytes(), &mut false).unwrap();
            assert!(Arc::ptr_eq(&entry.breaker, &before.breaker));
            assert_eq!(entry.age(9), before.age(9));
        }
    }

    #[test]
    fn a_table_never_fills_and_its_size_follows_max_keys() {
        for max_keys in [1, 10, 1000] {
            let table = Table::for_keys(max_keys - 1, max_keys);
            assert!(table.has_room(max_keys - 1));
            // Room for a quarter of `max_keys` in tombstones before a copy.
            assert!(table.has_room(max_keys + max_keys / 4 - 1));
            let mut set = 0;
            while table.has_room(set) {
                table.place(
                    (set as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    breaker("k"),
                    0,
                );
                set += 1;
            }
            assert!(table.entries().count() < table.slots());
        }
    }
}
