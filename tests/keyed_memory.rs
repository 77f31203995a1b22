//! What keyed breakers and breaker layers cost in memory, counted by the allocator: the default
//! `max_keys` bounds a family's memory, a family gives memory back once its keys are evicted, and
//! a layer wrapping a service (per connection, under axum) allocates nothing that it keeps.
#![cfg(feature = "tower")]

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

use resiliency::tower::BreakerLayer;
use resiliency::Breaker;
use tower::Layer;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Relaxed)
}

/// Bytes per key of a family built from `options`, each key's breaker having seen an error (so
/// that its window is allocated).
fn bytes_per_key(options: resiliency::BreakerBuilder) -> usize {
    const KEYS: usize = 4096;
    let runtime = support::paused_runtime();
    let family = options.max_keys(KEYS).build_keyed().unwrap();
    let before = live();
    runtime.block_on(async {
        for key in 0..KEYS {
            let _ = family
                .breaker(&key)
                .call(async { Err::<(), support::BoxError>("down".into()) })
                .await;
        }
    });
    assert_eq!(family.len(), KEYS);
    let per_key = (live() - before) as usize / KEYS;
    drop(family);
    per_key
}

#[test]
fn the_default_max_keys_bounds_a_familys_memory() {
    let _serial = support::serial();
    // The default options: one error per key opens nothing (the count rule's ring holds
    // `error_threshold` error times).
    let count = bytes_per_key(Breaker::builder("memory.count"));
    let rate = bytes_per_key(Breaker::builder("memory.rate").failure_rate(0.5));
    // A rate window's stripes: 4 here, up to 16 on a machine with 16 CPUs or more.
    let stripes = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(4, 16)
        .next_power_of_two();
    let worst = rate + (16 - stripes) * 128;
    let max_keys = Breaker::builder("memory.default")
        .build_keyed()
        .unwrap()
        .max_keys();
    const BOUND: usize = 64 << 20;
    for (rule, per_key) in [
        ("count", count),
        ("rate", rate),
        ("rate, 16 stripes", worst),
    ] {
        assert!(
            max_keys * per_key <= BOUND,
            "{rule} rule: {per_key} B per key x {max_keys} keys = {} MB",
            (max_keys * per_key) >> 20
        );
    }
}

#[test]
fn a_family_gives_its_memory_back_once_its_keys_are_evicted() {
    let _serial = support::serial();
    let runtime = support::paused_runtime();
    let _entered = runtime.enter();
    let family = Breaker::builder("memory.shrink").build_keyed().unwrap();
    let before = live();
    for key in 0..10_000u32 {
        family.breaker(&key);
    }
    let full = live() - before;
    family.evict_idle();
    family.evict_idle();
    assert_eq!(family.len(), 0);
    // Evicted entries are reclaimed as the map's readers move on: look up a few keys.
    for _ in 0..4 {
        for key in 0..64u32 {
            family.get(&key);
        }
    }
    let left = live() - before;
    assert!(
        left < 64 << 10,
        "{left} B held after evicting every key ({full} B when full)"
    );
}

#[test]
fn a_layer_wrapping_services_keeps_nothing_per_service() {
    let _serial = support::serial();
    let single = BreakerLayer::new(Breaker::builder("memory.layer")).unwrap();
    let keyed = BreakerLayer::new(Breaker::builder("memory.layer_keyed"))
        .unwrap()
        .key_by(|key: &u32| *key);
    // The first wrap registers the breaker (and the family).
    let _ = single.layer(());
    drop(keyed.layer(()));
    let before = live();
    for _ in 0..10_000 {
        let _ = single.layer(());
        drop(keyed.layer(()));
        let _ = single.clone().layer(());
    }
    // Less than a byte per service: what is left is the test harness's own (a leak of one
    // pointer per service kept 240,000 B).
    let kept = live() - before;
    assert!(
        kept < 16 << 10,
        "{kept} B kept after wrapping 30,000 services"
    );
}
