//! The table of a keyed family: open addressing with linear probing over slots that are written
//! once, each holding a key's full hash and its breaker.
//!
//! A lookup of a key held reads its slot's line (the hash tells a slot of another key apart
//! without reading that key) and then its breaker, whose first lines hold the key (in place when
//! short), the reference count and the eviction marks: two dependent cache misses at a million
//! keys, where a map of separately allocated entries and keys takes five.
//!
//! Slots are written under the family's writer lock and never cleared: an evicted key's slot
//! keeps its breaker, marked evicted, as a tombstone that lookups pass over, until the table is
//! replaced by a fresh copy ([`Table::copy`]). Readers take no lock: the table lives while a
//! reader holds it (`ArcSwap`), and a set slot never changes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use crate::breaker::breaker::Breaker;

/// A key's full hash and its breaker.
type Entry = (u64, Arc<Breaker>);

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

    /// The breaker of `key` (whose hash is `hash`) that the table holds, unless evicted or being
    /// evicted; `marked` is set when a breaker of `key` was passed over for an eviction mark
    /// (a tombstone, or one that a sweep may yet keep).
    #[inline]
    pub(super) fn find(&self, hash: u64, key: &[u8], marked: &mut bool) -> Option<&Arc<Breaker>> {
        for (h, breaker) in self.probe(hash) {
            if *h == hash && breaker.key.as_ref().is_some_and(|k| k.as_bytes() == key) {
                if !breaker.evicted.load(Ordering::Relaxed) {
                    return Some(breaker);
                }
                *marked = true;
            }
        }
        None
    }

    /// Puts `breaker` in the first unset slot of `hash`'s probe sequence. The caller holds the
    /// writer lock, and checked [`has_room`](Self::has_room).
    pub(super) fn place(&self, hash: u64, breaker: Arc<Breaker>) {
        let len = self.slots.len();
        let start = ((u128::from(hash) * len as u128) >> 64) as usize;
        let (tail, head) = self.slots.split_at(start);
        let mut entry = Some((hash, breaker));
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

    /// A copy holding the breakers not evicted, in a table sized for them (`Table::for_keys`).
    /// The caller holds the writer lock, so that no mark changes meanwhile.
    pub(super) fn copy(&self, live: usize, max_keys: usize) -> Table {
        let fresh = Table::for_keys(live, max_keys);
        for (hash, breaker) in self.entries() {
            if !breaker.evicted.load(Ordering::Relaxed) {
                fresh.place(*hash, breaker.clone());
            }
        }
        fresh
    }
}
