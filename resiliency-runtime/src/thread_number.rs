//! A number for each live thread, for counts split into stripes (the rate rule's window, the
//! metrics' counts): a thread takes the lowest number free at its first use, and gives it back
//! when it ends, so the numbers of the threads alive stay small however many threads come and
//! go (a runtime's workers keep theirs; a blocking pool's threads reuse the numbers of those that
//! ended). No two live threads have the same number: a stripe indexed by a number below the count
//! of stripes has one writer at a time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// The number after every number handed out so far.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Numbers given back by threads that ended, lowest first.
static FREE: Mutex<BinaryHeap<Reverse<usize>>> = Mutex::new(BinaryHeap::new());

/// A thread's number, given back when the thread ends. Taking it and giving it back go through
/// `FREE`'s lock, so whatever the thread that ended wrote under its number happened before
/// anything the next holder does.
struct Number(usize);

impl Drop for Number {
    fn drop(&mut self) {
        // A poisoned lock keeps the number: it is never handed out again.
        if let Ok(mut free) = FREE.lock() {
            free.push(Reverse(self.0));
        }
    }
}

thread_local! {
    static NUMBER: Number = Number(take());
}

/// The number no live thread has: what a thread whose number is gone (its thread-locals being
/// destroyed as it ends) is told.
pub(crate) const NONE: usize = usize::MAX;

/// This thread's number: the lowest free at its first use; [`NONE`] while the thread ends.
#[inline(always)]
pub(crate) fn this_thread() -> usize {
    NUMBER.try_with(|number| number.0).unwrap_or(NONE)
}

/// The lowest number free.
#[cold]
fn take() -> usize {
    let freed = FREE.lock().ok().and_then(|mut free| free.pop());
    match freed {
        Some(Reverse(n)) => n,
        // Never `NONE`.
        None => NEXT.fetch_add(1, Relaxed) % NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_number_and_one_alive_at_once_has_another() {
        let mine = this_thread();
        assert_eq!(this_thread(), mine);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let other = this_thread();
                tx.send(other).unwrap();
                assert_eq!(this_thread(), other);
            });
        });
        assert_ne!(rx.recv().unwrap(), mine);
    }

    #[test]
    fn the_number_of_a_thread_that_ended_is_taken_again() {
        // Threads one after another: each gives its number back as it ends. Other tests' threads
        // come and go meanwhile, so the numbers seen stay few, not one.
        let numbers: std::collections::BTreeSet<usize> = (0..200)
            .map(|_| std::thread::spawn(this_thread).join().unwrap())
            .collect();
        assert!(
            numbers.len() < 50,
            "{} numbers for 200 threads",
            numbers.len()
        );
    }
}
