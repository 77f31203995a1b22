//! Loom model of the `max_in_flight` count: every interleaving of calls taking and giving back
//! slots. Run with `RUSTFLAGS="--cfg resiliency_loom" cargo test -p resiliency-runtime --release
//! --lib loom`.

use std::sync::Arc;

use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::in_flight::{give_back, take};

#[test]
fn loom_in_flight_never_admits_more_than_the_limit_and_every_slot_comes_back() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(5);
    builder.check(|| {
        const LIMIT: u32 = 2;
        let count = Arc::new(AtomicU32::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (count, running) = (count.clone(), running.clone());
                thread::spawn(move || {
                    if take(&*count, LIMIT) {
                        let now = running.fetch_add(1, SeqCst) + 1;
                        assert!(now <= LIMIT as usize, "{now} calls in flight");
                        running.fetch_sub(1, SeqCst);
                        give_back(&*count);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(count.load(SeqCst), 0, "a slot was lost");
        // With every call gone, the limit's slots are all free.
        assert!(take(&*count, LIMIT) && take(&*count, LIMIT) && !take(&*count, LIMIT));
    });
}
